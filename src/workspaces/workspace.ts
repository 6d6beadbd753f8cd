import type { Role } from '../identity/permissions.js';
import type { MetaField } from '../schemas/meta-field.js';
import type { Plan, Scope, VisaType } from '../shared/enums.js';
import type { DocumentTypeDef } from '../domain/documents/index.js';
import type { LeadBranch, LeadStaffMember, PipelineStage } from '../domain/leads/settings.js';

// A workspace's branches, users and stages are what the lead rules read (src/domain/leads/settings.ts), users with a
// role of the permission table.
export type { LeadBranch as Branch, PipelineStage } from '../domain/leads/settings.js';
export interface WorkspaceUser extends LeadStaffMember {
  role: Role;
  /**
   * Invited and not yet accepted (no access until then): `link` accepts only through the invitation's own link (it
   * was sent when the account had no password or passkey), `sign_in` also on the workspace list after signing in.
   */
  pending?: 'link' | 'sign_in';
}

/** Whose sign-ins a workspace asks to be made with a passkey (absent: nobody's). */
export const PASSKEY_REQUIREMENTS = ['none', 'owners_and_admins', 'everyone'] as const;
export type PasskeyRequirement = (typeof PASSKEY_REQUIREMENTS)[number];
export interface Named {
  key: string;
  name: string;
}
export interface ApplicationStageDef {
  id: string;
  key: string;
  name: string;
  position: number;
}
export interface ModuleDef {
  key: string;
  name: string;
  stages: string[];
  counts_toward_progress: boolean;
  optional: boolean;
}
export interface BucketSpec {
  capacity: number;
  refill_per_second: number;
}

/** A workspace's settings as stored: the definition with stable ids given to branches, users and application stages. */
export interface WorkspaceSettings {
  default_phone_country: string;
  /** The IANA zone the console shows and reads times in; absent in workspaces stored before it existed (UTC). */
  time_zone?: string;
  branches: LeadBranch[];
  users: WorkspaceUser[];
  pipeline: { stages: PipelineStage[] };
  lost_reasons: Named[];
  sources: Named[];
  custom_fields: MetaField[];
  visa_types: VisaType[];
  countries: string[];
  widget: {
    brand_color: string | null;
    logo_url: string | null;
    consent_text: string;
    consent_text_version: string;
    captcha: {
      provider: 'turnstile' | 'hcaptcha' | 'recaptcha' | 'none';
      site_key: string | null;
      sealed_secret: string | null;
    };
  };
  application_workflow: { stages: ApplicationStageDef[]; modules: ModuleDef[] };
  /**
   * The payload version the Events API answers in when a request names none (src/webhooks/versions). Absent in
   * workspaces stored before versions existed: the first version, the shape they were getting. New ones get the newest.
   */
  payload_version?: string;
  /** Absent: `none`. Set by an owner in the console or by the definition file's `passkeys_required`. */
  passkeys_required?: PasskeyRequirement;
  /** Absent in workspaces stored before documents existed: the defaults apply (documentTypesOf). */
  document_types?: DocumentTypeDef[];
  limits: {
    monthly_leads?: number | null;
    webhook_endpoints?: number;
    rate?: { key?: BucketSpec; scopes?: Partial<Record<Scope, BucketSpec>>; widget?: BucketSpec };
  };
}

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  status: 'active' | 'suspended';
  revision: number;
  settings: WorkspaceSettings;
}
