import { readPage, type FormField, type PageForm } from './crawl.js';
import type { ConsoleClient } from './support.js';

/**
 * The bulk forms of the lead list, as the crawl and the fuzz send them until the list renders its selection form:
 * the list's selection (checked ids, or all matching with its query, and an action), and each action's confirmation
 * form (as the console renders it for these leads). Actions the member's role may not take answer 403 and give none.
 */
export async function leadBulkForms(client: ConsoleClient, slug: string, leadIds: string[]): Promise<PageForm[]> {
  const action = `/console/w/${slug}/leads/bulk`;
  const field = (name: string, value: string): FormField => ({
    name,
    tag: 'input',
    type: 'hidden',
    value,
    options: [],
    checked: false,
  });
  const selection: PageForm = {
    page: `/console/w/${slug}/leads`,
    method: 'POST',
    action,
    multipart: false,
    fields: [
      field('_csrf', ''),
      ...leadIds.map((id) => field('ids', id)),
      field('scope', 'ids'),
      field('query', ''),
      field('action', 'assign'),
    ],
  };
  const forms = [selection];
  for (const kind of ['assign', 'move', 'task']) {
    const page = await client.post(action, { ids: leadIds, action: kind });
    if (page.status !== 200) continue;
    forms.push(...readPage(page.text, action).forms.filter((f) => f.action === action));
  }
  return forms;
}
