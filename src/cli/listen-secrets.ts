import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateSecret } from '../webhooks/signing.js';

/**
 * The folder where the CLI keeps its own state: VISA_CRM_CONFIG_DIR, else `visa-crm` in the platform's configuration
 * folder (XDG_CONFIG_HOME or ~/.config; %APPDATA% on Windows).
 */
export function configFolder(env: NodeJS.ProcessEnv = process.env): string {
  if (env.VISA_CRM_CONFIG_DIR) return env.VISA_CRM_CONFIG_DIR;
  const base =
    process.platform === 'win32'
      ? (env.APPDATA ?? path.join(os.homedir(), 'AppData', 'Roaming'))
      : (env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'));
  return path.join(base, 'visa-crm');
}

const FILE = 'listen-secrets.json';

interface SecretFile {
  /** `<key fingerprint> <receiver address>` → signing secret. */
  secrets: Record<string, string>;
}

/**
 * A key belongs to one workspace and mode, and the API tells its holder no workspace id, so the key stands for its
 * workspace: its SHA-256 (never the key itself) and the receiver's address name the secret.
 */
function entryName(apiKey: string, forwardTo: string): string {
  return `${createHash('sha256').update(apiKey).digest('hex').slice(0, 32)} ${forwardTo}`;
}

function read(file: string): SecretFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { secrets: {} };
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<SecretFile>;
    if (parsed.secrets && typeof parsed.secrets === 'object') return { secrets: { ...parsed.secrets } };
  } catch {
    // A file that is not ours (edited by hand, cut short) is replaced below, as if it were not there.
  }
  return { secrets: {} };
}

/**
 * The signing secret of this key's workspace and this receiver: the one kept from an earlier run, else a new one,
 * kept (file mode 0600, written whole and renamed into place) for the next run. `kept` says which.
 */
export function stableSecret(
  folder: string,
  apiKey: string,
  forwardTo: string,
): { secret: string; kept: boolean; file: string } {
  const file = path.join(folder, FILE);
  const stored = read(file);
  const name = entryName(apiKey, forwardTo);
  const existing = stored.secrets[name];
  if (existing && /^whsec_[A-Za-z0-9]{32}$/.test(existing)) return { secret: existing, kept: true, file };
  const secret = generateSecret();
  stored.secrets[name] = secret;
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  const temporary = `${file}.${randomUUID()}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temporary, file);
  return { secret, kept: false, file };
}
