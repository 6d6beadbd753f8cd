import { isCalendarDate } from './dates.js';
import type { CustomField } from './settings.js';

const TEXT_MAX = 2000;

/** Why a value does not fit a custom field's type and options, or undefined when it does. */
export function customValueProblem(field: CustomField, value: unknown): string | undefined {
  switch (field.type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'checkbox':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? undefined : 'must be a date YYYY-MM-DD';
    case 'dropdown': {
      const options = (field.options ?? []).map((o) => o.value);
      return typeof value === 'string' && options.includes(value) ? undefined : `must be one of: ${options.join(', ')}`;
    }
    case 'text':
    default:
      if (typeof value !== 'string') return 'must be a string';
      return value.length <= TEXT_MAX ? undefined : `must be at most ${TEXT_MAX} characters`;
  }
}

/**
 * Checks custom field values against the workspace's fields. A null value means "no value" (on update: remove the
 * key). Problems are reported as `custom_fields.<key>`.
 */
export function checkCustomFields(
  fields: readonly CustomField[],
  values: Record<string, unknown>,
  problems: Record<string, string>,
): Record<string, unknown> {
  const byKey = new Map(fields.filter((f) => f.key).map((f) => [f.key!, f]));
  const accepted: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    const field = byKey.get(key);
    if (!field) {
      problems[`custom_fields.${key}`] = 'is not a custom field of this workspace';
      continue;
    }
    if (value === null) {
      accepted[key] = null;
      continue;
    }
    const problem = customValueProblem(field, value);
    if (problem) problems[`custom_fields.${key}`] = problem;
    else accepted[key] = value;
  }
  return accepted;
}
