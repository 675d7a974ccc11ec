/** Quiet defaults for the embedded stack, set before any module creates a logger. */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_TRACE_ENABLED ??= 'false';
export {};
