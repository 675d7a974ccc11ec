import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('ExpireApproval', STEPS.ExpireApproval);
