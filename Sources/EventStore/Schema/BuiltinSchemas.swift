// The schemas shipped with evsync, embedded so the binary works from any
// directory. They are copies of the files in `Schemas/`; a test keeps them equal.
enum BuiltinSchemas {
    static let files: [(name: String, text: String)] = [
        ("holiday.schema.json", #"""
{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "Holiday",
  "description": "A public holiday, as the Holiday table of the sync tutorial.",
  "type": "object",
  "x-evsync-collection": "holidays",
  "properties": {
    "name": { "type": "string", "minLength": 1 },
    "date": { "type": "string", "format": "date" },
    "details": { "type": "string" },
    "wikipediaLink": { "type": "string", "format": "uri" },
    "observedBy": { "type": "array", "items": { "type": "string" } },
    "image": { "type": "string", "contentEncoding": "base64" }
  },
  "required": ["name", "date"],
  "additionalProperties": false
}
"""#),
        ("birthday.schema.json", #"""
{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "Birthday",
  "description": "Somebody's birthday, as the Birthday table of the sync tutorial.",
  "type": "object",
  "x-evsync-collection": "birthdays",
  "properties": {
    "name": { "type": "string", "minLength": 1 },
    "date": { "type": "string", "format": "date" },
    "giftIdeas": { "type": "string" },
    "facebook": { "type": "string" },
    "image": { "type": "string", "contentEncoding": "base64" }
  },
  "required": ["name", "date"],
  "additionalProperties": false
}
"""#),
    ]
}
