import tools from 'toolrunner-user-tools';
import { lazyDeps } from './runtime';
import { makeStepHandler, STEPS } from './steps';

/** Report releases the lock of the operation it reports, which needs the tool's lockKey. */
export const handler = makeStepHandler('Report', STEPS.Report, () => lazyDeps({ tools }));
