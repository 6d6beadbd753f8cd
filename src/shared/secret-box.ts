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
import { SettingError, type Config } from '../config.js';

/** What a sealed value is for: each purpose has a key of its own, derived from SECRET_ENCRYPTION_KEY. */
export type SecretPurpose =
  'webhook-secret' | 'captcha-secret' | 'list-cursor' | 'person-key' | 'person-key-seed' | 'person-key-nonce';

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
  // The data keys of crypto-shredding since they are derived from stored nonces with AES (RFC 8452's derivation).
  'person-key-nonce': { info: 'visa-crm/person-key-nonce/v1', readsRawKeyValues: false },
};

/** The key of one purpose: HKDF-SHA256 of the 32-byte master key with the fixed salt and the purpose as `info`. */
export function purposeKey(masterKey: Buffer, purpose: SecretPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, HKDF_SALT, PURPOSES[purpose].info, 32));
}

const RAW_KEY_PREFIX = 'v1:';
const PURPOSE_KEY_PREFIX = 'v2:';
/** Sealed for one holder: the purpose key, with the purpose and the holder's id as additional data. */
const BOUND_PREFIX = 'v3:';

function sealWith(key: KeyObject, plaintext: string, aad?: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function openWith(key: KeyObject, sealed: string, aad?: Buffer): string {
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
  // KeyObjects: Node 24 checks a Buffer key's type the slow way on each cipher (16 µs against 4 µs a seal).
  private readonly key: KeyObject;
  private readonly aad: Buffer;
  private readonly rawKey: KeyObject | undefined;

  readonly purpose: SecretPurpose;
  constructor(masterKey: Buffer, purpose: SecretPurpose) {
    this.purpose = purpose;
    this.key = createSecretKey(purposeKey(masterKey, purpose));
    this.aad = Buffer.from(PURPOSES[purpose].info, 'utf8');
    this.rawKey = PURPOSES[purpose].readsRawKeyValues ? createSecretKey(masterKey) : undefined;
  }

  seal(plaintext: string): string {
    return PURPOSE_KEY_PREFIX + sealWith(this.key, plaintext, this.aad);
  }

  open(sealed: string): string {
    if (sealed.startsWith(PURPOSE_KEY_PREFIX)) return openWith(this.key, sealed.slice(3), this.aad);
    if (sealed.startsWith(RAW_KEY_PREFIX) && this.rawKey) return openWith(this.rawKey, sealed.slice(3));
    throw new Error(`Not a sealed ${this.purpose}`);
  }

  /**
   * Sealed for one holder (a webhook endpoint's id): the id is part of the additional data, so the value opens for
   * that holder only and cannot be moved onto another (docs/decisions.md, "An import changes nothing outside its own
   * workspace").
   */
  sealFor(holder: string, plaintext: string): string {
    return BOUND_PREFIX + sealWith(this.key, plaintext, this.boundData(holder));
  }

  /** Opens a value sealed for this holder; values sealed before binding (`v2:`, `v1:`) open for any holder. */
  openFor(holder: string, sealed: string): string {
    if (sealed.startsWith(BOUND_PREFIX)) return openWith(this.key, sealed.slice(3), this.boundData(holder));
    return this.open(sealed);
  }

  /** Whether a value is sealed for a holder (else it is sealed before binding, or not sealed). */
  static isBound(sealed: string): boolean {
    return sealed.startsWith(BOUND_PREFIX);
  }

  private boundData(holder: string): Buffer {
    return Buffer.concat([this.aad, Buffer.from([0]), Buffer.from(holder, 'utf8')]);
  }
}

/**
 * Derives 32-byte keys from stored random seeds: HMAC-SHA256 under one purpose's key. The seed is not secret on its
 * own (without SECRET_ENCRYPTION_KEY it derives nothing) and deleting it makes the key underivable, which is all
 * crypto-shredding needs of a wrapped key, for one HMAC instead of an AES-GCM seal and a third of the stored bytes.
 */
export class SeedDerivation {
  private readonly key: KeyObject;

  readonly purpose: SecretPurpose;
  constructor(masterKey: Buffer, purpose: SecretPurpose) {
    this.purpose = purpose;
    this.key = createSecretKey(purposeKey(masterKey, purpose));
  }

  derive(seed: Buffer): Buffer {
    return createHmac('sha256', this.key).update(seed).digest();
  }
}

/** The length of the nonces NonceKeyDerivation derives keys from (RFC 8452's nonce). */
export const KEY_NONCE_BYTES = 12;
const BLOCK = 16;
/** AES blocks per derived key: four, each giving its first 8 bytes. */
const BLOCKS_PER_KEY = 4;

/**
 * Derives 32-byte keys from stored random 12-byte nonces with the key derivation of AES-GCM-SIV (RFC 8452 §4, the
 * message-encryption key of AES-256): key = AES(K, LE32(2) ‖ N)[0..8) ‖ AES(K, LE32(3) ‖ N)[0..8) ‖
 * AES(K, LE32(4) ‖ N)[0..8) ‖ AES(K, LE32(5) ‖ N)[0..8), with K one purpose's key. As with SeedDerivation, a nonce
 * alone derives nothing and deleting it makes the key underivable. Kept only to read key rows still in that
 * derived format (`s2:`), which start-up rewrites as wrapped keys. Known-answer test: RFC 8452 Appendix C.2.
 */
export class NonceKeyDerivation {
  private readonly keyGeneratingKey: Buffer;
  /** `keyGeneratingKey`: RFC 8452's name for the 32-byte key the derivation runs under (here a purpose key). */
  constructor(keyGeneratingKey: Buffer) {
    this.keyGeneratingKey = keyGeneratingKey;
    if (keyGeneratingKey.length !== 32) throw new Error('A key-generating key is 32 bytes');
  }

  static forPurpose(masterKey: Buffer, purpose: SecretPurpose): NonceKeyDerivation {
    return new NonceKeyDerivation(purposeKey(masterKey, purpose));
  }

  /** The key of each nonce, in order. */
  deriveAll(nonces: readonly Buffer[]): Buffer[] {
    const blocks = Buffer.alloc(nonces.length * BLOCKS_PER_KEY * BLOCK);
    nonces.forEach((nonce, i) => {
      if (nonce.length !== KEY_NONCE_BYTES) throw new Error(`A key nonce is ${KEY_NONCE_BYTES} bytes`);
      for (let j = 0; j < BLOCKS_PER_KEY; j++) {
        const at = (i * BLOCKS_PER_KEY + j) * BLOCK;
        blocks.writeUInt32LE(2 + j, at);
        nonce.copy(blocks, at + 4);
      }
    });
    // ECB is the right mode here: each block is one independent AES call of the derivation, with distinct inputs.
    const cipher = createCipheriv('aes-256-ecb', this.keyGeneratingKey, null).setAutoPadding(false);
    const out = Buffer.concat([cipher.update(blocks), cipher.final()]);
    blocks.fill(0);
    // One allocation for the batch's keys, each a view of its 32 bytes: fewer buffers for the collector to track.
    const slab = Buffer.alloc(nonces.length * 32);
    for (let i = 0; i < nonces.length; i++)
      for (let j = 0; j < BLOCKS_PER_KEY; j++) {
        const at = (i * BLOCKS_PER_KEY + j) * BLOCK;
        out.copy(slab, i * 32 + j * 8, at, at + 8);
      }
    out.fill(0);
    return nonces.map((_, i) => slab.subarray(i * 32, i * 32 + 32));
  }

  derive(nonce: Buffer): Buffer {
    return this.deriveAll([nonce])[0]!;
  }
}

/** The boxes of every purpose, made from SECRET_ENCRYPTION_KEY. */
export class SecretBox {
  readonly webhookSecrets: PurposeBox;
  readonly captchaSecrets: PurposeBox;
  readonly listCursors: PurposeBox;
  readonly personKeys: PurposeBox;
  readonly personKeySeeds: SeedDerivation;
  readonly personKeyNonces: NonceKeyDerivation;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('The secret encryption key must be 32 bytes');
    this.webhookSecrets = new PurposeBox(masterKey, 'webhook-secret');
    this.captchaSecrets = new PurposeBox(masterKey, 'captcha-secret');
    this.listCursors = new PurposeBox(masterKey, 'list-cursor');
    this.personKeys = new PurposeBox(masterKey, 'person-key');
    this.personKeySeeds = new SeedDerivation(masterKey, 'person-key-seed');
    this.personKeyNonces = NonceKeyDerivation.forPurpose(masterKey, 'person-key-nonce');
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
      throw new SettingError('SECRET_ENCRYPTION_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)');
    return new SecretBox(key);
  }
  if (config.databaseUrl)
    throw new SettingError(
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
