import { handle } from 'hono/aws-lambda';
import tools from 'toolrunner-user-tools';
import { makeHttpApp } from './http-app';
import { lazyDeps } from './runtime';
import { flushingSpans } from './flush-spans';

/** API Gateway → this Lambda → the same Hono app `npm start` serves locally. */
export const handler = flushingSpans(handle(makeHttpApp(lazyDeps({ tools }))));
