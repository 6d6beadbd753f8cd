export const name = 'member notifications: what is new for a member, mailed at once or in a daily digest';

// One row per thing a member hears about (docs/decisions.md, "Member notifications"). The subscriber that writes them
// follows the event log from its checkpoint and commits rows and checkpoint together; `dedupe` is unique per member,
// so a replay writes nothing twice. Rows hold ids, never a person's name: what a mail says is read when it is sent.
// The checkpoint starts at the log's end: a deployment does not mail everyone about the past.
export const sql = `
CREATE TABLE member_notifications (
  id              uuid PRIMARY KEY,
  tenant_id       uuid NOT NULL,
  user_id         text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('lead_assigned', 'task_assigned', 'task_overdue', 'follow_up_due',
                                                'endpoint_paused')),
  subject_id      uuid NOT NULL,
  sandbox         boolean NOT NULL DEFAULT false,
  dedupe          text NOT NULL,
  happened_at     timestamptz NOT NULL,
  created_at      timestamptz NOT NULL,
  seen_at         timestamptz,
  instant_state   text NOT NULL DEFAULT 'pending' CHECK (instant_state IN ('pending', 'sent', 'skipped', 'failed')),
  instant_attempts integer NOT NULL DEFAULT 0,
  lease_until     timestamptz,
  claim_id        uuid,
  digest_id       uuid,
  CONSTRAINT member_notifications_once UNIQUE (tenant_id, user_id, dedupe)
);
CREATE INDEX member_notifications_instant ON member_notifications (created_at, id) WHERE instant_state = 'pending';
CREATE INDEX member_notifications_undigested ON member_notifications (tenant_id, user_id, created_at)
  WHERE digest_id IS NULL;
CREATE INDEX member_notifications_unseen ON member_notifications (tenant_id, user_id, created_at DESC)
  WHERE seen_at IS NULL;

-- A member's choice per workspace; no row: at once on, digest off.
CREATE TABLE member_notification_settings (
  tenant_id   uuid NOT NULL,
  user_id     text NOT NULL,
  at_once     boolean NOT NULL,
  digest      boolean NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, user_id)
);

-- One digest per member and local date: the unique key is what keeps a second runner from mailing it again.
CREATE TABLE member_notification_digests (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  user_id     text NOT NULL,
  local_date  date NOT NULL,
  state       text NOT NULL CHECK (state IN ('pending', 'sent', 'skipped', 'failed')),
  attempts    integer NOT NULL DEFAULT 0,
  lease_until timestamptz,
  claim_id    uuid,
  created_at  timestamptz NOT NULL,
  sent_at     timestamptz,
  CONSTRAINT member_notification_digests_once UNIQUE (tenant_id, user_id, local_date)
);
CREATE INDEX member_notification_digests_pending ON member_notification_digests (created_at) WHERE state = 'pending';

-- Unsubscribe links: the SHA-256 of a random token, for one member of one workspace, good for nothing else.
CREATE TABLE member_unsubscribe_tokens (
  token_hash  bytea PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  user_id     text NOT NULL,
  created_at  timestamptz NOT NULL
);

-- Follow-ups due: the owner's live leads by the follow-up's ISO text (UTC, written by toISOString, so text order is
-- time order), read by the scan that notices follow-ups falling due.
CREATE INDEX leads_follow_up_due ON leads ((body->>'next_follow_up_at'), tenant_id)
  WHERE owner_id IS NOT NULL AND converted = false AND sandbox = false AND body->>'next_follow_up_at' IS NOT NULL;

INSERT INTO subscription_checkpoints (name, tx_id, position)
SELECT 'member-notifications', coalesce((SELECT tx_id FROM events ORDER BY tx_id DESC, position DESC LIMIT 1), '0'),
       coalesce((SELECT position FROM events ORDER BY tx_id DESC, position DESC LIMIT 1), 0)
ON CONFLICT (name) DO NOTHING;
`;
