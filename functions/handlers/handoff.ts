import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Handoff', STEPS.Handoff);
