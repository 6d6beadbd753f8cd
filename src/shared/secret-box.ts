import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';

/** Encrypts secrets at rest (webhook secrets, captcha secrets) with AES-256-GCM. */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('The secret encryption key must be 32 bytes');
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  open(sealed: string): string {
    if (!sealed.startsWith('v1:')) throw new Error('Unknown sealed-secret format');
    const raw = Buffer.from(sealed.slice(3), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}

/**
 * SECRET_ENCRYPTION_KEY when set. On the embedded default a key is generated once into the data folder, so a
 * newcomer needs no setup; with an external DATABASE_URL the key must be configured, since the folder is not the data's home.
 */
export async function loadSecretBox(config: Pick<Config, 'secretEncryptionKey' | 'databaseUrl' | 'dataDir'>): Promise<SecretBox> {
  if (config.secretEncryptionKey) {
    const key = Buffer.from(config.secretEncryptionKey, 'base64');
    if (key.length !== 32) throw new Error('SECRET_ENCRYPTION_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)');
    return new SecretBox(key);
  }
  if (config.databaseUrl) throw new Error('SECRET_ENCRYPTION_KEY is required when DATABASE_URL is set (generate one with: openssl rand -base64 32)');
  const file = path.join(config.dataDir, 'encryption.key');
  if (!existsSync(file)) {
    await fs.mkdir(config.dataDir, { recursive: true });
    await fs.writeFile(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
  return new SecretBox(Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64'));
}
