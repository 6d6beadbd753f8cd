import { LeadRuleError } from '../../domain/leads/errors.js';
import { ApiError } from '../../http/errors.js';

/** Runs domain work, answering a broken lead rule as the API error it names. */
export async function asApiErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof LeadRuleError) throw new ApiError(error.status, error.code, error.message, error.fields ? { fields: error.fields } : {});
    throw error;
  }
}
