import type { FIELD_TYPES } from '../../shared/enums.js';
import type { Named } from './lead.js';

export interface LeadBranch {
  id: string;
  code: string;
  name: string;
}

export interface LeadStaffMember {
  id: string;
  name: string;
  email: string;
  role: string;
  branch_id: string;
  active: boolean;
  /** An invitee who has not accepted yet: not a member, so they own and are given no lead. */
  pending?: string;
}

export interface PipelineStage {
  key: string;
  name: string;
  lost: boolean;
}

/** A custom field as the lead rules check it (a workspace's MetaField has this shape and a label and help text). */
export interface CustomField {
  key?: string;
  type?: (typeof FIELD_TYPES)[number];
  required?: boolean;
  options?: readonly { value: string }[];
}

/**
 * The part of a workspace's settings the lead rules read. The stored settings (WorkspaceSettings in
 * src/workspaces/workspace.ts) have this shape and more, so the domain names what it needs without depending on
 * where workspaces are kept.
 */
export interface LeadSettings {
  default_phone_country: string;
  branches: readonly LeadBranch[];
  users: readonly LeadStaffMember[];
  pipeline: { stages: readonly PipelineStage[] };
  lost_reasons: readonly Named[];
  custom_fields: readonly CustomField[];
}

/** The stage a new lead starts in. */
export function firstStage(settings: Pick<LeadSettings, 'pipeline'>): PipelineStage {
  return settings.pipeline.stages[0]!;
}

/** The pipeline's lost stage, if it has one. */
export function lostStage(settings: Pick<LeadSettings, 'pipeline'>): PipelineStage | undefined {
  return settings.pipeline.stages.find((s) => s.lost);
}
