import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';

// The README's Layout section names every folder of src/ once, and no folder that is gone.
t.test("README's Layout section lists exactly the folders of src/", async (t) => {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Layout\n'));
  const end = section.indexOf('\n## ', 5);
  const listed = [...(end === -1 ? section : section.slice(0, end)).matchAll(/^- `src\/([a-z-]+)`/gm)].map((m) => m[1]);
  const folders = readdirSync('src', { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
  t.same([...listed].sort(), [...folders].sort(), 'listed folders = folders of src/');
  t.equal(new Set(listed).size, listed.length, 'each folder listed once');
});
