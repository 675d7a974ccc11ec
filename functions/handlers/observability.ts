// First: it decides the X-Ray SDK's mode, which the SDK reads once, when the tracer imports it.
import './xray-mode';
import { Logger } from '@aws-lambda-powertools/logger';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { powertoolsLog } from '../adapters/powertools-log';
import { useDefaultLog } from '../core/log';

/** Structured logs and X-Ray traces; task tokens, idempotency keys and arguments are never logged. */
export const logger = new Logger({ serviceName: 'toolrunner' });
/** The runner's own lines (the log port): the process's log from here on, and the one its deps carry. */
export const runnerLog = powertoolsLog();
useDefaultLog(runnerLog);
export const tracer = new Tracer({
  serviceName: 'toolrunner',
  enabled: process.env.POWERTOOLS_TRACE_ENABLED !== 'false' && Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME),
});
