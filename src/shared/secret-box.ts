import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';

/** What a sealed value is for: each purpose has a key of its own, derived from SECRET_ENCRYPTION_KEY. */
export type SecretPurpose = 'webhook-secret' | 'captcha-secret' | 'list-cursor' | 'person-key' | 'person-key-seed';

/** HKDF-SHA256 salt: fixed and public (its job is domain separation, not secrecy); changing it loses every value. */
export const HKDF_SALT = 'visa-crm/secret-encryption-key/hkdf-salt/v1';

const PURPOSES: Record<SecretPurpose, { info: string; readsRawKeyValues: boolean }> = {
  // Webhook and captcha secrets sealed before the keys were split (prefix `v1:`, sealed with the raw key) stay
  // readable: webhook secrets live on in the immutable event log, captcha secrets in workspace settings.
  'webhook-secret': { info: 'visa-crm/webhook-secret/v1', readsRawKeyValues: true },
  'captcha-secret': { info: 'visa-crm/captcha-secret/v1', readsRawKeyValues: true },
  // Cursors live for minutes in a client's hands: old ones are simply refused as invalid.
  'list-cursor': { info: 'visa-crm/list-cursor/v1', readsRawKeyValues: false },
  // The data keys of crypto-shredding (one per person's stream), wrapped for the personal_data_keys table.
  'person-key': { info: 'visa-crm/person-key/v1', readsRawKeyValues: false },
  // The data keys of crypto-shredding since they are derived from stored seeds (HMAC-SHA256, nothing wrapped).
  'person-key-seed': { info: 'visa-crm/person-key-seed/v1', readsRawKeyValues: false },
};

/** The key of one purpose: HKDF-SHA256 of the 32-byte master key with the fixed salt and the purpose as `info`. */
export function purposeKey(masterKey: Buffer, purpose: SecretPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, HKDF_SALT, PURPOSES[purpose].info, 32));
}

const RAW_KEY_PREFIX = 'v1:';
const PURPOSE_KEY_PREFIX = 'v2:';

function sealWith(key: Buffer, plaintext: string, aad?: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function openWith(key: Buffer, sealed: string, aad?: Buffer): string {
  const raw = Buffer.from(sealed, 'base64');
  if (raw.length < 28) throw new Error('Sealed value too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/**
 * Seals and opens the values of one purpose with AES-256-GCM: `v2:` + base64(iv, tag, ciphertext) under the
 * purpose's own key, with the purpose's name as additional data. A value sealed for one purpose does not open as
 * another. Where the purpose allows, `v1:` values sealed with the raw master key (before the keys were split) open too.
 */
export class PurposeBox {
  private readonly key: Buffer;
  private readonly aad: Buffer;
  private readonly rawKey: Buffer | undefined;

  constructor(
    masterKey: Buffer,
    readonly purpose: SecretPurpose,
  ) {
    this.key = purposeKey(masterKey, purpose);
    this.aad = Buffer.from(PURPOSES[purpose].info, 'utf8');
    this.rawKey = PURPOSES[purpose].readsRawKeyValues ? masterKey : undefined;
  }

  seal(plaintext: string): string {
    return PURPOSE_KEY_PREFIX + sealWith(this.key, plaintext, this.aad);
  }

  open(sealed: string): string {
    if (sealed.startsWith(PURPOSE_KEY_PREFIX)) return openWith(this.key, sealed.slice(3), this.aad);
    if (sealed.startsWith(RAW_KEY_PREFIX) && this.rawKey) return openWith(this.rawKey, sealed.slice(3));
    throw new Error(`Not a sealed ${this.purpose}`);
  }
}

/**
 * Derives 32-byte keys from stored random seeds: HMAC-SHA256 under one purpose's key. The seed is not secret on its
 * own (without SECRET_ENCRYPTION_KEY it derives nothing) and deleting it makes the key underivable, which is all
 * crypto-shredding needs of a wrapped key, for one HMAC instead of an AES-GCM seal and a third of the stored bytes.
 */
export class SeedDerivation {
  private readonly key: KeyObject;

  constructor(
    masterKey: Buffer,
    readonly purpose: SecretPurpose,
  ) {
    this.key = createSecretKey(purposeKey(masterKey, purpose));
  }

  derive(seed: Buffer): Buffer {
    return createHmac('sha256', this.key).update(seed).digest();
  }
}

/** The boxes of every purpose, made from SECRET_ENCRYPTION_KEY. */
export class SecretBox {
  readonly webhookSecrets: PurposeBox;
  readonly captchaSecrets: PurposeBox;
  readonly listCursors: PurposeBox;
  readonly personKeys: PurposeBox;
  readonly personKeySeeds: SeedDerivation;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('The secret encryption key must be 32 bytes');
    this.webhookSecrets = new PurposeBox(masterKey, 'webhook-secret');
    this.captchaSecrets = new PurposeBox(masterKey, 'captcha-secret');
    this.listCursors = new PurposeBox(masterKey, 'list-cursor');
    this.personKeys = new PurposeBox(masterKey, 'person-key');
    this.personKeySeeds = new SeedDerivation(masterKey, 'person-key-seed');
  }
}

/**
 * SECRET_ENCRYPTION_KEY when set. On the embedded default a key is generated once into the data folder, so a
 * newcomer needs no setup; with an external DATABASE_URL the key must be configured, since the folder is not the data's home.
 */
export async function loadSecretBox(
  config: Pick<Config, 'secretEncryptionKey' | 'databaseUrl' | 'dataDir'>,
): Promise<SecretBox> {
  if (config.secretEncryptionKey) {
    const key = Buffer.from(config.secretEncryptionKey, 'base64');
    if (key.length !== 32)
      throw new Error('SECRET_ENCRYPTION_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)');
    return new SecretBox(key);
  }
  if (config.databaseUrl)
    throw new Error(
      'SECRET_ENCRYPTION_KEY is required when DATABASE_URL is set (generate one with: openssl rand -base64 32)',
    );
  const file = path.join(config.dataDir, 'encryption.key');
  if (!existsSync(file)) {
    await fs.mkdir(config.dataDir, { recursive: true });
    await fs
      .writeFile(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' })
      .catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
  }
  return new SecretBox(Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64'));
}
