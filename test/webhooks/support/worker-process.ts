// The webhook workers in a process of their own, so a test can kill it mid-delivery (SIGKILL, no cleanup).
// Env: DATABASE_URL, SECRET_ENCRYPTION_KEY, WEBHOOK_TEST_CA (a PEM file), WEBHOOK_ALLOW_LOOPBACK=true.
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { createServices } from '../../../src/bootstrap.js';
import { loadConfig } from '../../../src/config.js';
import { createPool } from '../../../src/storage/postgres.js';
import { startWorkers } from '../../../src/subscribers/index.js';
import { configureWebhookRuntime } from '../../../src/webhooks/runtime.js';

const config = loadConfig();
const url = config.databaseUrl!;
const pool = createPool(url, 5);
const services = await createServices(config, { pool, url, kind: 'external', close: () => pool.end() });
configureWebhookRuntime(services, { ca: readFileSync(process.env.WEBHOOK_TEST_CA!, 'utf8') });
await startWorkers(services, pino({ level: 'silent' }), { pollIntervalMs: 25 });
process.stdout.write('ready\n');
