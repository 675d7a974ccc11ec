import { randomBytes } from 'node:crypto';
import { makeHttpApp } from '../functions/handlers/http-app';
import { makeLifecycleHandlers } from '../functions/handlers/steps';
import type { Deps } from '../functions/core/ports';
import { escalateWaitingApprovals } from '../functions/steps/escalation';
import { publishGauges } from '../functions/steps/gauges';
import { sweep } from '../functions/steps/resume';
import { API_ROUTES, FUNCTIONS, type FunctionName } from '../infra/functions';
import { LIFECYCLE_FUNCTIONS, type LifecycleFunction } from '../statemachines/definition';
import { type HttpApiHandler, viaHttpApiEvent } from './api-gateway-event';
import { importBundle, lambdaBundle } from './bundles';
import type { LocalFunction } from './sfn-endpoint';

/**
 * `source`: the TypeScript handlers in-process. `bundled`: the bundles CDK deploys, each with its own module state.
 * `template`: the stack built from the synthesized cloud assembly (local/template/), not by this module.
 */
export type HandlerMode = 'source' | 'bundled' | 'template';

/** The modes whose handlers this module makes. */
export type CodeHandlerMode = Exclude<HandlerMode, 'template'>;

export interface Handlers {
  mode: CodeHandlerMode;
  /** The Lambda behind each ASL placeholder. */
  lifecycle: Record<LifecycleFunction, LocalFunction>;
  /** The API, as the local HTTP server calls it. */
  api: (request: Request) => Response | Promise<Response>;
  /** One run of the sweeper Lambda. */
  sweep: () => Promise<unknown>;
}

export interface HandlerContext {
  /** The embedded stack's dependencies (source mode). */
  deps: () => Deps;
  /**
   * The environment a Lambda of this stack would get (tables, state machine, config file, endpoints),
   * read when a bundle first runs, after the API's port is known.
   */
  lambdaEnv: (name: FunctionName) => Record<string, string>;
  /** The tools module bundled into the tools Lambdas (default: the demo tools). */
  toolsEntry?: string;
  /**
   * Variables of `lambdaEnv` that, as the construct's `tools.environment`, only the Lambdas that run tools
   * get (default: the demo tools' SANDBOX_URL). The others run without them, as deployed.
   */
  toolsEnvironment?: string[];
}

export async function makeHandlers(mode: CodeHandlerMode, context: HandlerContext): Promise<Handlers> {
  return mode === 'bundled' ? bundledHandlers(context) : sourceHandlers(context.deps);
}

function sourceHandlers(deps: () => Deps): Handlers {
  let app: ReturnType<typeof makeHttpApp> | undefined;
  return {
    mode: 'source',
    lifecycle: makeLifecycleHandlers(deps),
    api: (request) => {
      app ??= makeHttpApp(deps());
      return app.fetch(request);
    },
    sweep: async () => {
      await sweep(deps());
      await escalateWaitingApprovals(deps());
      await publishGauges(deps());
    },
  };
}

type LambdaHandler = (event: unknown, context: unknown) => Promise<unknown>;

/**
 * Every handler from its bundle, built at start. Each stack imports its own instances (a query string makes
 * the module URL unique), so module state such as the cached clients is per stack, as it is per Lambda.
 * A Lambda reads its environment when it first builds its clients: the stack's variables are put in
 * place right before each import and call, so two stacks in one process do not see each other's tables.
 */
async function bundledHandlers(context: HandlerContext): Promise<Handlers> {
  const files = Object.fromEntries(
    await Promise.all(
      (Object.keys(FUNCTIONS) as FunctionName[]).map(
        async (name) => [name, await lambdaBundle(name, { toolsEntry: context.toolsEntry })] as const,
      ),
    ),
  ) as Record<FunctionName, string>;
  const instance = randomBytes(6).toString('hex');
  const toolsOnly = context.toolsEnvironment ?? ['SANDBOX_URL'];
  const enter = (name: FunctionName) => {
    Object.assign(process.env, context.lambdaEnv(name));
    if (!FUNCTIONS[name].tools) for (const key of toolsOnly) delete process.env[key];
  };
  // A bundle reads its environment while it loads (tools modules) and when its handler first runs: no other
  // bundle may switch process.env in between, so loads and the start of each call take turns.
  let turn: Promise<unknown> = Promise.resolve();
  const loaded = new Map<FunctionName, Promise<LambdaHandler>>();
  const load = (name: FunctionName) => {
    if (!loaded.has(name)) {
      const loading = turn.then(() => {
        enter(name);
        return importBundle(files[name], instance).then((m) => m.handler as LambdaHandler);
      });
      turn = loading.catch(() => undefined);
      loaded.set(name, loading);
    }
    return loaded.get(name)!;
  };
  const invoke = (name: FunctionName) => async (event: unknown) => {
    const handler = await load(name);
    // Wait out every load in progress, including ones that began while waiting.
    for (let seen = turn; ; seen = turn) {
      await seen;
      if (seen === turn) break;
    }
    // The handler's synchronous start (where it builds its clients from the environment) runs right after.
    enter(name);
    return handler(event, { functionName: name, awsRequestId: randomBytes(8).toString('hex') });
  };
  return {
    mode: 'bundled',
    lifecycle: Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [n, invoke(n)])) as Record<LifecycleFunction, LocalFunction>,
    api: viaHttpApiEvent(async () => invoke('Api') as HttpApiHandler, API_ROUTES),
    sweep: () => invoke('Sweeper')({}),
  };
}
