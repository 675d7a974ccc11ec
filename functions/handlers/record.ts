import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Record', STEPS.Record);
