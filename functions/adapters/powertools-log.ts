import { Logger } from '@aws-lambda-powertools/logger';
import type { Log, LogFields } from '../core/log';

/**
 * The log port over the Powertools logger: the runner's lines in the format of the steps' own (level, message,
 * timestamp, service, the X-Ray trace id on Lambda, then the fields). Its level is its own, INFO: these lines
 * were always written, and `POWERTOOLS_LOG_LEVEL` (WARN in the embedded stack) tunes the steps' debug lines only.
 */
export function powertoolsLog(logger: Logger = new Logger({ serviceName: 'toolrunner', logLevel: 'INFO' })): Log {
  const extra = (fields: LogFields | undefined) => ({ ...fields });
  return {
    debug: (message, fields) => logger.debug(message, extra(fields)),
    info: (message, fields) => logger.info(message, extra(fields)),
    warn: (message, fields) => logger.warn(message, extra(fields)),
    error: (message, fields) => logger.error(message, extra(fields)),
  };
}
