import t from 'tap';
import { Value } from 'typebox/value';
import type { Task } from '../../src/domain/tasks/index.js';
import { Task as TaskSchema } from '../../src/http/schemas/task.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { TestClock } from '../support/app.js';
import { webhookHarness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';

t.test('task.overdue reaches a real HTTPS receiver, signed, with the Task as data', async (t) => {
  // The clock starts at the real time: the receiver checks the signature's `t` against its own clock.
  const clock = new TestClock(new Date());
  const h = await webhookHarness(t, { now: clock.now });
  const endpoint = await h.createEndpoint({
    url: h.receiver.url('127.0.0.1', '/task-hooks'),
    events: ['task.overdue'],
  });
  await h.startWorkers({ taskTimerIntervalMs: 25 });

  const lead = await h.request('/v1/leads', {
    method: 'POST',
    key: h.ws.live,
    json: { full_name: 'Task Hook', email: 'task.hook@example.org', consent: true },
  });
  const leadId = ((await lead.json()) as { id: string }).id;
  const created = await h.admin('POST', '/tasks', {
    lead_id: leadId,
    title: 'Send the checklist',
    assignee: 'meera@northstar.example',
    due_at: new Date(clock.now().getTime() + 60_000).toISOString(),
  });
  t.equal(created.status, 201);
  const task = (await created.json()) as Task;

  // Completed before its due time: never announced.
  const done = (await (
    await h.admin('POST', '/tasks', {
      lead_id: leadId,
      title: 'Done in time',
      due_at: new Date(clock.now().getTime() + 60_000).toISOString(),
    })
  ).json()) as Task;
  t.equal((await h.admin('POST', `/tasks/${done.id}/complete`)).status, 200);

  clock.advance(61_000);
  const [request] = await waitFor(
    () => (h.receiver.requests.length > 0 ? h.receiver.requests : null),
    'task.overdue is delivered',
  );
  const envelope = verifyWebhook({
    body: request!.body,
    signature: request!.headers['x-service-signature'],
    secret: endpoint.secret,
    now: clock.now(),
  });
  t.match(envelope, { event: 'task.overdue', tenant_id: h.ws.workspace.id });
  const data = envelope.data as unknown as Task;
  t.ok(Value.Check(TaskSchema, data), 'data is the documented Task (OpenAPI component Task)');
  t.same(data, { ...task, overdue: true }, 'the Task as created, now overdue');

  const stream = await h.services.store.readStream(`task-${task.id}`);
  t.equal(stream.filter((e) => e.type === 'task.overdue').length, 1, 'one task.overdue in the log');
  t.equal(request!.headers['webhook-id'], stream.find((e) => e.type === 'task.overdue')!.id, 'the delivered one');
  const doneStream = await h.services.store.readStream(`task-${done.id}`);
  t.notOk(
    doneStream.some((e) => e.type === 'task.overdue'),
    'the completed task never fired',
  );
});
