import type { HistoryItem } from '../commands/history/history.js';
import { html, type Html } from './html.js';
import { eventKindName } from './labels.js';
import { when } from './time.js';

/** A record's events, newest first, times in the zone; with `asOfBase`, each links to the record right after it. */
export function timeline(items: HistoryItem[], zone: string, asOfBase?: string): Html {
  return html`<ol class="timeline" reversed>
    ${[...items].reverse().map(
      (e) =>
        html`<li>
          <p><strong>${eventKindName(e.type)}</strong> · ${when(e.at, zone)} · by ${e.actor_text}</p>
          <p>${e.summary}</p>
          ${asOfBase ? html`<p><a href="${asOfBase}?as_of=${e.at}#then">As it was after this</a></p>` : ''}
        </li>`,
    )}
  </ol>`;
}
