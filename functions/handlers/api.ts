import { handle } from 'hono/aws-lambda';
import tools from 'toolrunner-user-tools';
import { makeHttpApp } from './http-app';
import { lazyDeps } from './runtime';
import { flushingTelemetry } from './flush-telemetry';

/** API Gateway → this Lambda → the same Hono app `npm start` serves locally. */
export const handler = flushingTelemetry(handle(makeHttpApp(lazyDeps({ tools }))));
