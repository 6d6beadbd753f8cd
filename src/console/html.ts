/** Markup already escaped (or written here): interpolated as is. */
export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escape(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function part(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join('');
  return escape(value);
}

/** A template whose every interpolated value is escaped, unless it is Html (or a list of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  return new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? part(values[i]) : ''), ''));
}

export const raw = (text: string) => new Html(text);

/**
 * A data table: its caption, a heading per column (`scope="col"`; a heading that is false or null is left out, for
 * columns only some members see), and its rows, each a `<tr>`.
 */
export function table(o: {
  caption: unknown;
  headings: readonly (string | false | null | undefined)[];
  rows: readonly Html[];
}): Html {
  const headings = o.headings.filter((h): h is string => typeof h === 'string');
  // The box scrolls a table wider than a phone; focusable and named, so a keyboard can scroll it too.
  const name = (o.caption instanceof Html ? o.caption.text.replace(/<[^>]*>/g, ' ') : String(o.caption))
    .replace(/\s+/g, ' ')
    .trim();
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${name}">
    <table>
      <caption>
        ${o.caption}
      </caption>
      <thead>
        <tr>
          ${headings.map((h) => html`<th scope="col">${h}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${o.rows}
      </tbody>
    </table>
  </div>`;
}
