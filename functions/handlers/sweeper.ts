import { makeSweepHandler } from './steps';

export const handler = makeSweepHandler();
