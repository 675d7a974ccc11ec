/**
 * Off Lambda nothing is traced, yet the X-Ray SDK in its automatic mode, set up when it is first imported,
 * hooks every promise in the process (cls-hooked's async hooks, destroy tracking included): about 3 ms of
 * CPU per call under `npm start`. Off Lambda it starts in manual mode, which installs no hook. Imported
 * before the tracer, so the SDK reads the variable in time; on Lambda the automatic mode stays.
 */
if (!process.env.AWS_LAMBDA_FUNCTION_NAME) process.env.AWS_XRAY_MANUAL_MODE ??= 'true';
