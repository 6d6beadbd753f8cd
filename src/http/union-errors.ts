/**
 * What a failed `anyOf`/`oneOf` means, in the API's words. Ajv reports a failed union as one error at the union and
 * every branch's own errors beside it; the answer should name the field and its real problem instead:
 * - a union whose schema carries `x-refusal` (`{ fields, message }`: a rule over several properties, such as "a phone
 *   or an email", written as anyOf/oneOf so generated clients know it) names each of those fields with the message;
 * - `T | null` with a non-null value reports T's errors ("must match format \"email\""), not "has the wrong type";
 * - a union of constants reports the allowed values, as an enum does.
 * Anything else is left for the error handler, which folds a union's inner errors into "has the wrong type".
 */

/** The annotation of a union that stands for a rule over several properties of one object. */
export interface UnionRefusal {
  /** The properties named in the answer, each with the message. */
  fields: string[];
  message: string;
}

export interface AjvLike {
  keyword: string;
  instancePath: string;
  schemaPath: string;
  message?: string;
  params: Record<string, unknown>;
}

type Schema = Record<string, unknown>;
const isSchema = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const pointerToken = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** Every `x-refusal` of a schema, keyed by the schema path Ajv gives its union's error (`#/anyOf`, `#/properties/a/oneOf`). */
export function unionRefusals(schema: unknown): Map<string, UnionRefusal> {
  const found = new Map<string, UnionRefusal>();
  const stack: [unknown, string][] = [[schema, '#']];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (!isSchema(node)) continue;
    const refusal = node['x-refusal'] as UnionRefusal | undefined;
    if (refusal) for (const union of ['anyOf', 'oneOf']) if (node[union]) found.set(`${path}/${union}`, refusal);
    for (const key of ['items', 'additionalProperties', 'not'])
      if (isSchema(node[key])) stack.push([node[key], `${path}/${key}`]);
    for (const key of ['anyOf', 'oneOf', 'allOf'])
      if (Array.isArray(node[key])) (node[key] as unknown[]).forEach((s, i) => stack.push([s, `${path}/${key}/${i}`]));
    if (isSchema(node.properties))
      for (const [name, s] of Object.entries(node.properties))
        stack.push([s, `${path}/properties/${pointerToken(name)}`]);
  }
  return found;
}

const isUnion = (error: AjvLike) => error.keyword === 'anyOf' || error.keyword === 'oneOf';

/** The branch index of an error inside the union at `unionPath`. */
const branchOf = (error: AjvLike, unionPath: string) => error.schemaPath.slice(unionPath.length + 1).split('/')[0]!;

/** The errors with each failed union explained as the module comment says; the others unchanged, in order. */
export function explainUnions<E extends AjvLike>(errors: E[], refusals: ReadonlyMap<string, UnionRefusal>): AjvLike[] {
  const dropped = new Set<AjvLike>();
  const added = new Map<AjvLike, AjvLike[]>();
  // Outer unions first (shorter schema paths), so an inner union inside a replaced one is never explained twice.
  const unions = errors.filter(isUnion).sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const union of unions) {
    if (dropped.has(union)) continue;
    const inner = errors.filter((e) => e.schemaPath.startsWith(`${union.schemaPath}/`));
    const refusal = refusals.get(union.schemaPath);
    if (refusal) {
      for (const e of [union, ...inner]) dropped.add(e);
      added.set(
        union,
        refusal.fields.map((field) => ({
          keyword: 'refusal',
          instancePath: `${union.instancePath}/${pointerToken(field)}`,
          schemaPath: union.schemaPath,
          message: refusal.message,
          params: {},
        })),
      );
      continue;
    }
    const branches = new Map<string, AjvLike[]>();
    for (const e of inner) {
      const branch = branchOf(e, union.schemaPath);
      branches.set(branch, [...(branches.get(branch) ?? []), e]);
    }
    const nullBranch = [...branches].find(
      ([, list]) =>
        list.length === 1 &&
        list[0]!.keyword === 'type' &&
        list[0]!.params.type === 'null' &&
        list[0]!.instancePath === union.instancePath,
    );
    if (nullBranch && branches.size === 2) {
      // `T | null` and the value is not null: what T found is the problem.
      dropped.add(union);
      dropped.add(nullBranch[1][0]!);
      continue;
    }
    if (inner.length > 0 && inner.every((e) => e.keyword === 'const' && e.instancePath === union.instancePath)) {
      for (const e of [union, ...inner]) dropped.add(e);
      added.set(union, [
        {
          keyword: 'enum',
          instancePath: union.instancePath,
          schemaPath: union.schemaPath,
          message: 'must be equal to one of the allowed values',
          params: { allowedValues: inner.map((e) => e.params.allowedValue) },
        },
      ]);
    }
  }
  // A rule over several fields comes after every field's own problems: a field named by both reports its own.
  const kept = errors.flatMap((e) => (dropped.has(e) ? (isUnion(e) ? (added.get(e) ?? []) : []) : [e]));
  const rules = kept.filter((e) => e.keyword === 'refusal');
  return [...kept.filter((e) => e.keyword !== 'refusal'), ...rules];
}
