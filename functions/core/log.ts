/**
 * The log port: one structured line per call, `{ level, message, ...fields }`. Fields say what happened
 * (ids, counts, an error's name and message); never a key, a token, a task token, arguments or a stack.
 * On Lambda and in the embedded stack the Powertools logger writes them (adapters/powertools-log.ts).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Readonly<Record<string, unknown>>;
export type Log = Readonly<Record<LogLevel, (message: string, fields?: LogFields) => void>>;

/** A log that hands each line, as one JSON text, to `write`: a line sink a caller or a test injects. */
export function jsonLines(write: (line: string) => void): Log {
  const at = (level: LogLevel) => (message: string, fields?: LogFields) => write(JSON.stringify({ level, message, ...fields }));
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

// Until the runtime installs its logger (handlers/observability.ts), and where none is installed (the Tools
// function, which loads no adapter; tests that build a surface by hand), lines go to standard error as JSON.
let processLog: Log = jsonLines((line) => console.error(line));

/** The process's log, for code no `Deps` reaches (the shared HTTP checks, the surfaces' error handlers). */
export function defaultLog(): Log {
  return processLog;
}

/** Installs the process's log; the runtime does, once, before it serves anything. */
export function useDefaultLog(log: Log): void {
  processLog = log;
}

/** The log a step or command writes to: the one its deps carry, else the process's. */
export function logOf(deps: { log?: Log }): Log {
  return deps.log ?? processLog;
}
