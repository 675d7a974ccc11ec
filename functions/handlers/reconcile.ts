import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Reconcile', STEPS.Reconcile);
