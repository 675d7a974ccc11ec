import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Execute', STEPS.Execute);
