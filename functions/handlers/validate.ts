import { makeStepHandler, STEPS } from './steps';

/** Where every resumed execution enters: routes by the record alone, so it needs no tools. */
export const handler = makeStepHandler('Validate', STEPS.Validate);
