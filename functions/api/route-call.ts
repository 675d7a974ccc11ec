import type { Context } from 'hono';
import type { Principal, Role } from '../core/model';
import type { Deps } from '../core/ports';
import type { BodyOf, RouteName } from './route-table';

export type Env = { Variables: { principal: Principal } };

/** What a handler gets: the request, the app's dependencies, and what the route table declares for it. */
export interface RouteCall<B> {
  c: Context<Env>;
  deps: Deps;
  /** The route's roles (none for public and link routes): who may see a record the path names (`access.ts`). */
  roles: Role[];
  /** The longest `Prefer: wait` this deployment allows. */
  longestWaitSeconds: number;
  /** The body, parsed with the route's declared request schema: `400 invalid_request` when it does not fit. */
  body: () => Promise<B>;
}

export type Handler<B = never> = (call: RouteCall<B>) => Response | Promise<Response>;

/** One handler per route of the table, each getting the body its route declares: a route without one does not compile. */
export type RouteHandlers = { [N in RouteName]: Handler<BodyOf<N>> };
