/** One failed attempt, as the pause notice lists it. */
export interface NoticeFailure {
  at: Date;
  /** The receiver's HTTP status, or null when no answer came. */
  status: number | null;
  /** Why the attempt failed when there was no status (timeout, refused connection, TLS); never a response body. */
  error: string | null;
}

export interface PauseNoticeFacts {
  ownerName: string;
  workspaceSlug: string;
  endpointId: string;
  url: string;
  sandbox: boolean;
  pausedAt: Date;
  reason: string;
  /** The latest failures, newest first. */
  failures: NoticeFailure[];
  /** Where the admin interface is reached (PUBLIC_BASE_URL). */
  publicBaseUrl: string;
}

/**
 * The URL as the notice shows it: scheme, host, port and path. The query and any credentials are left out, since
 * receivers sometimes put a token there and an email is read in places the workspace settings are not.
 */
export function displayedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(unreadable URL)';
  }
}

function failureLine(failure: NoticeFailure): string {
  const what = failure.status !== null ? `HTTP ${failure.status}` : (failure.error ?? 'no answer');
  return `  - ${failure.at.toISOString()}  ${what}`;
}

/** The email sent to each active owner when an endpoint pauses: plain text, no secret, nothing of the events sent. */
export function composePauseNotice(facts: PauseNoticeFacts): { subject: string; text: string } {
  const url = displayedUrl(facts.url);
  const mode = facts.sandbox ? 'test' : 'live';
  const failures = facts.failures.length > 0 ? facts.failures.map(failureLine).join('\n') : '  (none recorded)';
  const resumeRoute = `${facts.publicBaseUrl}/admin/v1/workspaces/${facts.workspaceSlug}/webhooks/${facts.endpointId}/resume`;
  return {
    subject: `Webhook endpoint paused: ${url}`,
    text: [
      `Hello ${facts.ownerName},`,
      '',
      `The ${mode} webhook endpoint ${url} (${facts.endpointId}) of workspace ${facts.workspaceSlug} was paused at ` +
        `${facts.pausedAt.toISOString()} because ${facts.reason}.`,
      '',
      'Its latest failed deliveries:',
      failures,
      '',
      'No event is lost: new events are kept for the endpoint and sent once it is resumed, oldest first.',
      '',
      'To resume it, fix the receiving server, then either:',
      `  - run: visa-crm webhook resume ${facts.workspaceSlug} ${facts.endpointId} --as <your email>`,
      `  - or send: POST ${resumeRoute} (admin interface, with your personal access token)`,
      '',
      'You receive this because you are an owner of the workspace.',
    ].join('\n'),
  };
}
