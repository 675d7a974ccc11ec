import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Validate', STEPS.Validate);
