import tools from 'toolrunner-user-tools';
import { lazyDeps } from './runtime';
import { makeStepHandler, STEPS } from './steps';

export const handler = makeStepHandler('Validate', STEPS.Validate, () => lazyDeps({ tools }));
