import { RuleError } from '../domain/rule-error.js';
import { ApiError } from '../http/errors.js';

/** A broken domain rule as the API error it names, so the HTTP routes and the CLI report it the same way. */
export function asApiError(error: unknown): unknown {
  if (error instanceof RuleError)
    return new ApiError(error.status, error.code, error.message, error.fields ? { fields: error.fields } : {});
  return error;
}

/** Runs domain work, answering a broken rule as its API error. */
export async function asApiErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asApiError(error);
  }
}
