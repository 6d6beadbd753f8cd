/**
 * JSON.parse, except where V8 misreads a text: on Node 24 (V8 13.6, and 14.6 in Node 26) JSON.parse can return the
 * wrong name for an escaped object key once an earlier parse made an object with a key whose escaped source begins
 * the same way (`{"\\": 0}` and then `{"\u0041": 0}` reads the key as `\`; nodejs/node#63785, open on 2026-11-27).
 * Only a text with a backslash can hold an escaped key, so every other text goes to JSON.parse; one with a backslash
 * is validated by JSON.parse (the same SyntaxError for a malformed text) and then read by the small parser below,
 * which builds each object itself. Remove this once the runtime's JSON.parse reads escaped keys right: the property
 * in test/shared/json-text.test.ts, run with JSON.parse in its place, finds the fault on Node 24.21 in 300 runs.
 */
export function parseJsonText(text: string): unknown {
  if (!text.includes('\\')) return JSON.parse(text);
  JSON.parse(text);
  const reader = new JsonReader(text);
  const value = reader.value();
  reader.end();
  return value;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/** A recursive-descent reader of a text JSON.parse has already accepted, so it checks only what it must to read it. */
class JsonReader {
  private at = 0;

  private readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  value(): unknown {
    this.skipWhitespace();
    const c = this.text[this.at];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (this.text.startsWith('true', this.at)) return this.literal(4, true);
    if (this.text.startsWith('false', this.at)) return this.literal(5, false);
    if (this.text.startsWith('null', this.at)) return this.literal(4, null);
    return this.number();
  }

  end(): void {
    this.skipWhitespace();
    if (this.at !== this.text.length) throw new SyntaxError(`Unexpected text at ${this.at}`);
  }

  private object(): Record<string, unknown> {
    const object: Record<string, unknown> = {};
    this.at++;
    this.skipWhitespace();
    if (this.text[this.at] === '}') {
      this.at++;
      return object;
    }
    for (;;) {
      this.skipWhitespace();
      const key = this.string();
      this.skipWhitespace();
      this.expect(':');
      // A data property of its own, as JSON.parse makes it, also for `__proto__` (never the prototype).
      Object.defineProperty(object, key, { value: this.value(), writable: true, enumerable: true, configurable: true });
      this.skipWhitespace();
      if (this.text[this.at++] === '}') return object;
    }
  }

  private array(): unknown[] {
    const array: unknown[] = [];
    this.at++;
    this.skipWhitespace();
    if (this.text[this.at] === ']') {
      this.at++;
      return array;
    }
    for (;;) {
      array.push(this.value());
      this.skipWhitespace();
      if (this.text[this.at++] === ']') return array;
    }
  }

  private string(): string {
    this.expect('"');
    let out = '';
    let from = this.at;
    for (;;) {
      const c = this.text[this.at];
      if (c === '"') {
        out += this.text.slice(from, this.at++);
        return out;
      }
      if (c === '\\') {
        out += this.text.slice(from, this.at);
        const kind = this.text[this.at + 1]!;
        if (kind === 'u') {
          out += String.fromCharCode(Number.parseInt(this.text.slice(this.at + 2, this.at + 6), 16));
          this.at += 6;
        } else {
          out += SIMPLE_ESCAPES[kind]!;
          this.at += 2;
        }
        from = this.at;
      } else this.at++;
    }
  }

  private number(): number {
    NUMBER.lastIndex = this.at;
    const match = NUMBER.exec(this.text)!;
    this.at += match[0].length;
    return Number(match[0]);
  }

  private literal<T>(length: number, value: T): T {
    this.at += length;
    return value;
  }

  private expect(c: string): void {
    if (this.text[this.at++] !== c) throw new SyntaxError(`Expected ${c} at ${this.at - 1}`);
  }

  private skipWhitespace(): void {
    while (WHITESPACE.has(this.text[this.at]!)) this.at++;
  }
}
