import { makeRequestApprovalHandler } from './steps';

export const handler = makeRequestApprovalHandler();
