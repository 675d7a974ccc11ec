import tools from 'toolrunner-user-tools';
import { lazyDeps } from './runtime';
import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Reconcile', STEPS.Reconcile, () => lazyDeps({ tools }));
