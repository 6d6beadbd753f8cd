const STYLE = `
  body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1c2430; background: #f3f6f8; }
  header { background: #0f3d3a; color: #fff; padding: 1.5rem 2rem; }
  header h1 { margin: 0; font-size: 1.6rem; }
  header p { margin: .35rem 0 0; opacity: .85; }
  main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(18rem, 34rem); gap: 2rem; padding: 2rem; max-width: 68rem; margin: 0 auto; }
  @media (max-width: 50rem) { main { grid-template-columns: 1fr; } }
  .pitch h2 { margin-top: 0; }
  .pitch li { margin: .4rem 0; }
  code { background: #e3e8ec; padding: .1rem .3rem; border-radius: 4px; }
  .note { font-size: .9rem; color: #505a66; }
`;

/** A consultancy's page with the form embedded as a customer would paste it; without a key it says how to get one. */
export function demoPage(scriptPath: string, publicKey: string | null): string {
  const form = publicKey
    ? `<div id="enquiry"></div>\n      <script src="${scriptPath}" data-key="${publicKey}" data-target="#enquiry" async></script>`
    : `<div role="alert"><h2>A public key is needed</h2>
        <p>Start the service with <code>visa-crm demo</code> (or <code>npm start</code>); it creates demo keys allowed from this origin
        and prints them. Then open <code>/widget/demo?key=&lt;public test key&gt;</code>.</p></div>`;
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Embeddable lead form: demo</title>
    <style>${STYLE}</style>
  </head>
  <body>
    <header><h1>Northstar Visa Consultants</h1><p>Study, work and settle abroad, with counsellors who answer.</p></header>
    <main>
      <section class="pitch">
        <h2>Talk to a counsellor</h2>
        <ul>
          <li>Student visas for Australia, Canada, Germany, Ireland, New Zealand, the UK and the US.</li>
          <li>Work and permanent-residence pathways, assessed honestly.</li>
          <li>One counsellor from first call to visa decision.</li>
        </ul>
        <p class="note">This page is the development demo of the embeddable form (served only when SERVE_DEMO is on).
        A consultancy pastes one script tag with its public key; the form loads its fields, brand colour and consent text from
        <code>GET /v1/widget/config</code> and sends enquiries to <code>POST /v1/leads</code>.</p>
      </section>
      <section aria-label="Enquiry form">
      ${form}
      </section>
    </main>
  </body>
</html>
`;
}
