/** One sample of a Prometheus text exposition: a metric name, its labels and its value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const HELP = new RegExp(`^# HELP (${NAME}) (.*)$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(?:,|$)/;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest.length > 0) {
    const match = LABEL.exec(rest);
    if (!match) throw new Error(`malformed labels in: ${line}`);
    labels[match[1]!] = match[2]!.replace(/\\(["\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(match[0].length);
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  const value = Number(text);
  if (!/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text) || Number.isNaN(value)) throw new Error(`bad value in: ${line}`);
  return value;
}

/**
 * A strict parser of the Prometheus text format (version 0.0.4): every line is a HELP, a TYPE or a sample, each
 * sample belongs to a metric whose TYPE came before it (histograms: `_bucket`, `_sum`, `_count`), nothing else.
 */
export function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      if (!HELP.test(line)) throw new Error(`malformed HELP: ${line}`);
      continue;
    }
    const type = TYPE.exec(line);
    if (type) {
      if (types.has(type[1]!)) throw new Error(`second TYPE for ${type[1]}`);
      types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`malformed line: ${line}`);
    const name = sample[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(family)) throw new Error(`sample before its TYPE: ${line}`);
    if (family !== name && types.get(family) !== 'histogram' && types.get(family) !== 'summary')
      throw new Error(`suffixed sample of a ${types.get(family)}: ${line}`);
    samples.push({ name, labels: parseLabels(sample[2] ?? '', line), value: parseValue(sample[3]!, line) });
  }
  return { types, samples };
}

/** The value of the one sample with this name and (at least) these labels; undefined when there is none. */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
