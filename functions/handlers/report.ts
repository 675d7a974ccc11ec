import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Report', STEPS.Report);
