/** Quiet defaults for the embedded stack, set before any module creates a logger. */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_TRACE_ENABLED ??= 'false';
// The SDK's documented switch for its NodeVersionSupportWarning: Node 20 is supported by this project
// (package.json engines), so a nine-line notice at every start tells an operator nothing actionable.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
export {};
