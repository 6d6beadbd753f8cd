import { Type } from 'typebox';

/** The workspace an admin operation acts on, as the workspace UI names it. */
export const WorkspaceRef = Type.String({
  minLength: 1,
  maxLength: 100,
  description: "the workspace's id (uuid) or slug",
});
