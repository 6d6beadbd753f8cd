import { createConfig, lintFromString } from '@redocly/openapi-core';
import type { TestApp } from './app.js';

export interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Record<string, unknown>;
}

export interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  parameters?: Parameter[];
  security?: Record<string, string[]>[];
  responses: Record<string, { description: string }>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string; license?: Record<string, string> };
  servers?: { url: string; description?: string }[];
  tags?: { name: string; description?: string }[];
  security?: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, Record<string, string>> };
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Every operation of a document, with its method and path. */
export function operationsOf(document: OpenApiDocument): { method: string; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({ method, path, operation })),
  );
}

/** A document as the app serves it, with the answer's status checked. */
export async function servedDocument(api: TestApp, path: string): Promise<OpenApiDocument> {
  const response = await api.request(path);
  if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as OpenApiDocument;
}

/** What Redocly's `recommended` ruleset finds in a document (errors and warnings), as readable lines. */
export async function redoclyFindings(document: OpenApiDocument): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({
    source: JSON.stringify(document),
    absoluteRef: 'served-openapi.json',
    config,
  });
  return problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
}
