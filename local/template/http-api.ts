import type { APIGatewayProxyResultV2 } from 'aws-lambda';
import { gatewayAnswer, httpApiEvent, httpApiResponse, matchRoute } from '../api-gateway-event';
import type { LambdaFunction } from './lambda-pool';
import type { StackModel } from './stack-model';

/** An HTTP API's request payload limit. */
export const HTTP_API_PAYLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

/** `*` and `?` of an IAM/Lambda permission ARN pattern. */
function globMatches(pattern: string, value: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return re.test(value);
}

/** One request the HTTP API answered, as `npm run cost` counts it. */
export interface ApiRequestRecord {
  method: string;
  path: string;
  status: number;
  requestBytes: number;
  responseBytes: number;
  latencyMs: number;
}

/**
 * The template's HTTP API on the local port: the route keys of its AWS::ApiGatewayV2::Route resources, each to
 * its integration's function with a payload-format-2.0 event. As API Gateway: an unrouted path is its 404, a
 * body over 10 MB its 413, an integration that does not answer within its timeout its 503, a function it may
 * not invoke (no AWS::Lambda::Permission for the route) or that fails its 500.
 */
export function httpApi(
  model: StackModel,
  functions: Map<string, LambdaFunction>,
  log: (line: string) => void,
  onRequest?: (record: ApiRequestRecord) => void,
): (request: Request) => Promise<Response> {
  const routeKeys = model.routes.map((r) => r.routeKey);
  const apiId = model.api?.id ?? 'local';
  const answer = onRequest ? metered(onRequest) : (handle: (request: Request) => Promise<Response>) => handle;
  return answer(async (request) => {
    const url = new URL(request.url);
    const length = Number(request.headers.get('content-length') ?? 0);
    if (length > HTTP_API_PAYLOAD_LIMIT_BYTES) return gatewayAnswer('tooLarge');
    const match = matchRoute(routeKeys, request.method, url.pathname);
    if (!match) return gatewayAnswer('notFound');
    const route = model.routes.find((r) => r.routeKey === match.routeKey)!;
    const fn = functions.get(route.functionArn);
    const path = match.routeKey === '$default' ? '' : match.routeKey.split(' ')[1];
    const sourceArn = `arn:aws:execute-api:${model.region}:${model.account}:${apiId}/$default/${request.method}${path}`;
    const permitted = model.invokePermissions.some(
      (p) =>
        p.functionArn === route.functionArn &&
        p.principal === 'apigateway.amazonaws.com' &&
        (!p.sourceArn || globMatches(p.sourceArn, sourceArn)),
    );
    if (!fn || !permitted) {
      log(`API Gateway may not invoke ${route.functionArn} for ${match.routeKey} (no AWS::Lambda::Permission matches ${sourceArn})`);
      return gatewayAnswer('integrationFailed');
    }
    const event = await httpApiEvent(request, match, { apiId, accountId: model.account });
    if (Buffer.byteLength(event.body ?? '') > HTTP_API_PAYLOAD_LIMIT_BYTES) return gatewayAnswer('tooLarge');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), route.timeoutMs);
    });
    try {
      // The function runs on after the gateway gives up, until its own timeout, as on AWS.
      const invocation = fn.invoke(event);
      invocation.catch(() => undefined);
      const result = await Promise.race([invocation, timedOut]);
      if (result === 'timeout') return gatewayAnswer('integrationTimeout');
      return httpApiResponse(result as APIGatewayProxyResultV2, request.method);
    } catch (error) {
      log(`${fn.spec.name} failed: ${(error as Error).name}: ${(error as Error).message}`);
      if ((error as Error).name === 'RequestEntityTooLargeException') return gatewayAnswer('tooLarge');
      return gatewayAnswer('integrationFailed');
    } finally {
      clearTimeout(timer);
    }
  });
}

/** Tells `onRequest` of each request with its body's and its answer's size, once answered. */
function metered(onRequest: (record: ApiRequestRecord) => void) {
  return (handle: (request: Request) => Promise<Response>) => async (request: Request) => {
    const started = performance.now();
    const requestBytes = request.body ? (await request.clone().arrayBuffer()).byteLength : 0;
    const response = await handle(request);
    const responseBytes = (await response.clone().arrayBuffer()).byteLength;
    const { pathname } = new URL(request.url);
    onRequest({
      method: request.method,
      path: pathname,
      status: response.status,
      requestBytes,
      responseBytes,
      latencyMs: performance.now() - started,
    });
    return response;
  };
}
