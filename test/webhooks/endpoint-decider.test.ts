import t from 'tap';
import {
  decide,
  EndpointNotFoundError,
  evolve,
  SECRET_ROTATION_OVERLAP_MS,
  type EndpointCommand,
  type EndpointEvent,
  type EndpointState,
} from '../../src/domain/webhooks/endpoint.js';
import { deciderSpec } from '../support/decider-spec.js';

// The webhook endpoint decider's rules, given/when/then, without a database.

const spec = deciderSpec<EndpointState | null, EndpointCommand, EndpointEvent>({
  decide,
  evolve,
  initialState: () => null,
});

const ID = '5e1d7f4a-3c2b-4d6e-8f90-1a2b3c4d5e6f';
const NOW = new Date('2026-11-01T10:00:00.000Z');
const created: EndpointEvent = {
  type: 'webhook_endpoint.created',
  data: {
    endpoint_id: ID,
    url: 'https://crm-hooks.example.org/visa',
    description: 'CRM sync',
    events: ['lead.created'],
    sealed_secret: 'sealed-1',
    payload_version: '2026-11-29',
  },
};
const paused: EndpointEvent = {
  type: 'webhook_endpoint.paused',
  data: { endpoint_id: ID, reason: 'failing', consecutive_failures: 50 },
};
const deleted: EndpointEvent = { type: 'webhook_endpoint.deleted', data: { endpoint_id: ID } };
const pause: EndpointCommand = { type: 'pause', reason: 'failing', consecutiveFailures: 50 };

t.test('create: a new endpoint, once', async (t) => {
  spec(t)
    .given([])
    .when({
      type: 'create',
      endpointId: ID,
      url: 'https://crm-hooks.example.org/visa',
      description: 'CRM sync',
      events: ['lead.created'],
      sealedSecret: 'sealed-1',
      payloadVersion: '2026-11-29',
    })
    .then([created]);
  spec(t)
    .given([created])
    .when({
      type: 'create',
      endpointId: ID,
      url: 'https://x.example.org',
      description: null,
      events: [],
      sealedSecret: 's',
      payloadVersion: '2026-11-29',
    })
    .thenThrows({ message: /already exists/ });
});

t.test('pause: once, idempotently; resume only a paused endpoint', async (t) => {
  spec(t).given([created]).when(pause).then([paused]);
  spec(t).given([created, paused]).when(pause).thenNothing('a second worker crossing the threshold appends nothing');
  spec(t).given([created, deleted]).when(pause).thenNothing('a deleted endpoint is not paused');
  spec(t).given([]).when(pause).thenNothing('nor an unknown one');
  spec(t)
    .given([created, paused])
    .when({ type: 'resume' })
    .then([{ type: 'webhook_endpoint.resumed', data: { endpoint_id: ID } }]);
  spec(t).given([created]).when({ type: 'resume' }).thenNothing('an active endpoint resumes to nothing');
});

t.test('rotation: the new secret signs, the old one stays valid for the overlap', async (t) => {
  const rotated: EndpointEvent = {
    type: 'webhook_endpoint.secret_rotated',
    data: {
      endpoint_id: ID,
      sealed_secret: 'sealed-2',
      previous_sealed_secret: 'sealed-1',
      previous_secret_valid_until: new Date(NOW.getTime() + SECRET_ROTATION_OVERLAP_MS).toISOString(),
    },
  };
  spec(t).given([created]).when({ type: 'rotate_secret', sealedSecret: 'sealed-2', now: NOW }).then([rotated]);
  t.same(
    [created, rotated].reduce(evolve, null),
    {
      id: ID,
      deleted: false,
      status: 'active',
      sealedSecret: 'sealed-2',
      previousSealedSecret: 'sealed-1',
      previousSecretValidUntil: new Date('2026-11-02T10:00:00.000Z'),
      payloadVersion: '2026-11-29',
      rateLimitPerSecond: null,
    },
    'the state keeps both secrets and the end of the overlap',
  );
});

t.test('a deleted or unknown endpoint refuses delete, resume, rotation and test events', async (t) => {
  const refused: EndpointCommand[] = [
    { type: 'delete' },
    { type: 'resume' },
    { type: 'rotate_secret', sealedSecret: 's', now: NOW },
    { type: 'send_test', payload: {} },
    { type: 'change_version', payloadVersion: '2026-11-22', firstVersion: '2026-11-22' },
    { type: 'change', url: 'https://x.example/in', description: null, events: ['lead.lost'] },
  ];
  for (const command of refused) {
    spec(t).given([created, deleted]).when(command).thenThrows(new EndpointNotFoundError('No such webhook endpoint'));
    spec(t).given([]).when(command).thenThrows({ name: 'EndpointNotFoundError' }, `${command.type} of nothing`);
  }
  spec(t).given([created]).when({ type: 'delete' }).then([deleted]);
  spec(t)
    .given([created, paused])
    .when({ type: 'send_test', payload: { id: ID } })
    .then(
      [{ type: 'webhook.test', data: { endpoint_id: ID, payload: { id: ID } } }],
      'a paused endpoint gets test events',
    );
});

t.test('change: a living endpoint takes its new address, description and kinds, paused or not', async (t) => {
  const change = { url: 'https://crm-hooks.example.org/v2', description: null, events: ['lead.lost'] };
  const changed: EndpointEvent = { type: 'webhook_endpoint.changed', data: { endpoint_id: ID, ...change } };
  spec(t)
    .given([created])
    .when({ type: 'change', ...change })
    .then([changed]);
  spec(t)
    .given([created, paused])
    .when({ type: 'change', ...change })
    .then([changed], 'a paused one too');
});

t.test('change_version: the endpoint moves to another payload version; the same one appends nothing', async (t) => {
  const first = { firstVersion: '2026-11-22' };
  spec(t)
    .given([created])
    .when({ type: 'change_version', payloadVersion: '2026-11-22', ...first })
    .then([
      {
        type: 'webhook_endpoint.version_changed',
        data: { endpoint_id: ID, payload_version: '2026-11-22', previous_payload_version: '2026-11-29' },
      },
    ]);
  spec(t)
    .given([created])
    .when({ type: 'change_version', payloadVersion: '2026-11-29', ...first })
    .thenNothing('it is on that version already');
  const before: EndpointEvent = {
    type: 'webhook_endpoint.created',
    data: {
      endpoint_id: ID,
      url: 'https://crm-hooks.example.org/visa',
      description: null,
      events: [],
      sealed_secret: 's',
    },
  };
  spec(t)
    .given([before])
    .when({ type: 'change_version', payloadVersion: '2026-11-29', ...first })
    .then(
      [
        {
          type: 'webhook_endpoint.version_changed',
          data: { endpoint_id: ID, payload_version: '2026-11-29', previous_payload_version: '2026-11-22' },
        },
      ],
      'an endpoint created before versions existed was on the first one',
    );
  spec(t)
    .given([before])
    .when({ type: 'change_version', payloadVersion: '2026-11-22', ...first })
    .thenNothing('and moving it to the first appends nothing');
});
