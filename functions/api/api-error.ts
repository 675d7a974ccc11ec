import { RunnerError } from '../core/errors';
/** Errors are `{ error: { code, message } }` (the README's "Using it" and `docs/openapi.json`); nothing else, and never a stack. */
export class ApiError extends RunnerError {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
