// A reader of the Prometheus text exposition format, enough for the status
// page's storage section: families with their type and help, samples with
// their label text and value.

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: { name: string; labels: string; value: number }[];
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/;

export function parseMetrics(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) {
      f = { name, type: 'untyped', help: '', samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const rest = line.slice(7);
      const sp = rest.indexOf(' ');
      const name = sp < 0 ? rest : rest.slice(0, sp);
      const value = sp < 0 ? '' : rest.slice(sp + 1);
      if (line[2] === 'H') family(name).help = value;
      else family(name).type = value;
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = sampleLine.exec(line);
    if (!m) continue;
    const name = m[1];
    // A histogram's or summary's series belong to the family they extend.
    const base = families.has(name) ? name : name.replace(/_(bucket|sum|count|total|created)$/, '');
    const f = families.get(base) ?? family(name);
    f.samples.push({ name, labels: m[2] ?? '', value: Number(m[3]) });
  }
  return families;
}
