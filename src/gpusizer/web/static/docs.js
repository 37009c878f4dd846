// Renders /openapi.json as a list of endpoints and their fields (no Swagger UI: nothing from elsewhere).
"use strict";

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function typeOf(schema, spec) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.anyOf) return schema.anyOf.map((s) => typeOf(s, spec)).join(" | ");
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.type === "array") return `list of ${typeOf(schema.items, spec)}`;
  if (schema.type === "object" && schema.additionalProperties) return `map to ${typeOf(schema.additionalProperties, spec)}`;
  return schema.type || "any";
}

function fields(ref, spec) {
  const schema = spec.components.schemas[ref.split("/").pop()];
  const table = el("table");
  const head = el("tr");
  for (const h of ["field", "type", "default", "about"]) head.appendChild(el("th", h));
  table.appendChild(head);
  const required = new Set(schema.required || []);
  for (const [name, field] of Object.entries(schema.properties || {})) {
    const row = el("tr");
    row.appendChild(el("td", required.has(name) ? `${name} (required)` : name));
    row.appendChild(el("td", typeOf(field, spec)));
    row.appendChild(el("td", field.default === undefined ? "" : JSON.stringify(field.default)));
    row.appendChild(el("td", field.description || ""));
    table.appendChild(row);
  }
  return table;
}

async function start() {
  const spec = await (await fetch("/openapi.json")).json();
  const main = document.getElementById("endpoints");
  main.appendChild(el("p", spec.info.description));
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const box = el("section", undefined, "endpoint");
      const title = el("h3");
      title.appendChild(el("span", method.toUpperCase(), "method"));
      title.appendChild(el("code", path));
      box.appendChild(title);
      box.appendChild(el("p", op.summary || ""));
      const body = op.requestBody && op.requestBody.content["application/json"];
      if (body && body.schema.$ref) box.appendChild(fields(body.schema.$ref, spec));
      main.appendChild(box);
    }
  }
}

start();
