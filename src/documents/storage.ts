import { createWriteStream, mkdirSync, type ReadStream, type WriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Where document files live. An upload is written to `incoming` first and stays there while it waits for its scan;
 * only a file that passed is moved to `stored`, the one place downloads read from. Infected files are deleted from
 * `incoming` and never reach `stored`.
 */
export interface DocumentStorage {
  /** A stream to write an upload into, under the document's id. */
  createIncoming(id: string): WriteStream;
  /** The local path of an incoming file, for the scanner; null when there is none. */
  incomingPath(id: string): Promise<string | null>;
  /** Moves a scanned file in; true when it is stored (also when another process moved it first). */
  accept(id: string): Promise<boolean>;
  /** Deletes an incoming file (refused, infected or never recorded); no file is no error. */
  discard(id: string): Promise<void>;
  /** Deletes a stored file (an acceptance whose transaction failed). */
  remove(id: string): Promise<void>;
  /** The stored file and its size; null when it is not stored. */
  open(id: string): Promise<{ stream: ReadStream; size: number } | null>;
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Document files on local disk (or a shared volume all service processes mount) under `<dataDir>/documents`. */
export class DiskDocumentStorage implements DocumentStorage {
  private readonly incoming: string;
  private readonly stored: string;

  constructor(root: string) {
    this.incoming = path.join(root, 'incoming');
    this.stored = path.join(root, 'stored');
  }

  private prepared = false;

  /** Creates the folders at the first upload (a service that never receives a document makes none). */
  private prepare(): void {
    if (this.prepared) return;
    mkdirSync(this.incoming, { recursive: true, mode: 0o700 });
    mkdirSync(this.stored, { recursive: true, mode: 0o700 });
    this.prepared = true;
  }

  private file(folder: string, id: string): string {
    // Ids come from the service, never from a client's path, but a path is only ever built from a UUID.
    if (!ID.test(id)) throw new Error('A document id is a UUID');
    return path.join(folder, id);
  }

  createIncoming(id: string): WriteStream {
    this.prepare();
    return createWriteStream(this.file(this.incoming, id), { flags: 'wx', mode: 0o600 });
  }

  async incomingPath(id: string): Promise<string | null> {
    const file = this.file(this.incoming, id);
    return (await exists(file)) ? file : null;
  }

  async accept(id: string): Promise<boolean> {
    this.prepare();
    try {
      await fs.rename(this.file(this.incoming, id), this.file(this.stored, id));
      return true;
    } catch (error) {
      if (isMissingFile(error)) return exists(this.file(this.stored, id));
      throw error;
    }
  }

  async discard(id: string): Promise<void> {
    await fs.rm(this.file(this.incoming, id), { force: true });
  }

  async remove(id: string): Promise<void> {
    await fs.rm(this.file(this.stored, id), { force: true });
  }

  async open(id: string): Promise<{ stream: ReadStream; size: number } | null> {
    const file = this.file(this.stored, id);
    try {
      const handle = await fs.open(file, 'r');
      const { size } = await handle.stat();
      return { stream: handle.createReadStream(), size };
    } catch (error) {
      if (isMissingFile(error)) return null;
      throw error;
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/** True for the file system's "no such file" (ENOENT). */
export function isMissingFile(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}
