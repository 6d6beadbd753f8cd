import t from 'tap';
import { newId } from '../../src/shared/ids.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('new ids are RFC 9562 version 7 UUIDs that start with their creation time', async (t) => {
  const before = Date.now();
  const id = newId();
  const after = Date.now();
  t.match(id, UUID, 'lower-case hex, version 7, RFC variant');
  const ms = parseInt(id.replaceAll('-', '').slice(0, 12), 16);
  t.ok(ms >= before && ms <= after, 'the first 48 bits are the creation time in milliseconds');
});

t.test('ids made later sort after earlier ones, so inserts land at the end of their indexes', async (t) => {
  const first = Array.from({ length: 1000 }, () => newId());
  await new Promise((resolve) => setTimeout(resolve, 5));
  const later = newId();
  t.equal(new Set(first).size, first.length, 'no id repeats');
  t.ok(
    first.every((id) => id < later),
    'every id of an earlier millisecond sorts before a later one',
  );
});
