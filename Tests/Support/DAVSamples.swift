import Foundation
/// Items as other clients write them, for the DAV round-trip and interop tests: the properties, parameters and components
/// each one is seen to produce (the ids, names and data are made up), folded where their writers fold, which
/// is not always at 75 octets, and with a line no one folded. Written here with `\n`; `crlf` gives the text a
/// server sends.
public enum DAVSamples {
    public static func crlf(_ text: String) -> String { text.replacingOccurrences(of: "\n", with: "\r\n") }

    /// Apple Calendar (macOS), an all-day event with a default alarm: VALARM with its own UID, X-APPLE- and
    /// X-WR- properties, lines in alphabetical order.
    public static let appleHoliday = crlf("""
    BEGIN:VCALENDAR
    CALSCALE:GREGORIAN
    PRODID:-//Apple Inc.//macOS 14.5//EN
    VERSION:2.0
    BEGIN:VEVENT
    CREATED:20260412T081502Z
    DTEND;VALUE=DATE:20270506
    DTSTAMP:20260412T081530Z
    DTSTART;VALUE=DATE:20270505
    LAST-MODIFIED:20260412T081502Z
    SEQUENCE:0
    SUMMARY:Bevrijdingsdag
    TRANSP:TRANSPARENT
    UID:6A1F3C2E-8B9D-4E0F-A1B2-C3D4E5F60718
    X-APPLE-TRAVEL-ADVISORY-BEHAVIOR:AUTOMATIC
    BEGIN:VALARM
    ACTION:DISPLAY
    DESCRIPTION:Reminder
    TRIGGER:-PT15H
    UID:0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0
    X-APPLE-DEFAULT-ALARM:TRUE
    X-WR-ALARMUID:0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0
    END:VALARM
    END:VEVENT
    END:VCALENDAR

    """)

    /// Google Calendar's export of a yearly all-day event: METHOD, X-WR-, RRULE, a folded description with
    /// escapes and a link.
    public static let googleYearly = crlf("""
    BEGIN:VCALENDAR
    PRODID:-//Google Inc//Google Calendar 70.9054//EN
    VERSION:2.0
    CALSCALE:GREGORIAN
    METHOD:PUBLISH
    X-WR-CALNAME:Feestdagen
    X-WR-TIMEZONE:Europe/Amsterdam
    BEGIN:VEVENT
    DTSTART;VALUE=DATE:20271225
    DTEND;VALUE=DATE:20271226
    RRULE:FREQ=YEARLY
    DTSTAMP:20260101T120000Z
    UID:20271225_3j4k5l6m7n8o9p0q1r2s3t4u5v@google.com
    CLASS:PUBLIC
    CREATED:20251201T090000Z
    DESCRIPTION:Public holiday\\; shops closed\\, trains on the Sunday timetable.\\nS
     ee https://www.rijksoverheid.nl/onderwerpen/feestdagen/vraag-en-antwoord/wel
     ke-dagen-zijn-officiele-feestdagen
    LAST-MODIFIED:20251201T090000Z
    SEQUENCE:0
    STATUS:CONFIRMED
    SUMMARY:Eerste Kerstdag
    TRANSP:TRANSPARENT
    END:VEVENT
    END:VCALENDAR

    """)

    /// Google Calendar's timed meeting: VTIMEZONE, ORGANIZER and ATTENDEEs with quoted parameters (a CN with a
    /// comma), a VALARM, X-GOOGLE- properties. Not a holiday: a timed event.
    public static let googleMeeting = crlf("""
    BEGIN:VCALENDAR
    PRODID:-//Google Inc//Google Calendar 70.9054//EN
    VERSION:2.0
    CALSCALE:GREGORIAN
    METHOD:REQUEST
    BEGIN:VTIMEZONE
    TZID:Europe/Amsterdam
    X-LIC-LOCATION:Europe/Amsterdam
    BEGIN:DAYLIGHT
    TZOFFSETFROM:+0100
    TZOFFSETTO:+0200
    TZNAME:CEST
    DTSTART:19700329T020000
    RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
    END:DAYLIGHT
    BEGIN:STANDARD
    TZOFFSETFROM:+0200
    TZOFFSETTO:+0100
    TZNAME:CET
    DTSTART:19701025T030000
    RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
    END:STANDARD
    END:VTIMEZONE
    BEGIN:VEVENT
    DTSTART;TZID=Europe/Amsterdam:20270112T093000
    DTEND;TZID=Europe/Amsterdam:20270112T100000
    DTSTAMP:20270105T101500Z
    ORGANIZER;CN=Jansen\\, Pieter:mailto:pieter.jansen@example.com
    UID:7kukuqrfedlm2f9t6vj2k3n4o5@google.com
    ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED;CN="Jansen,
      Pieter";X-NUM-GUESTS=0:mailto:pieter.jansen@example.com
    ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=
     TRUE;CN=ada@example.org;X-NUM-GUESTS=0:mailto:ada@example.org
    X-GOOGLE-CONFERENCE:https://meet.google.com/abc-defg-hij
    CREATED:20270105T101500Z
    DESCRIPTION:Weekly sync
    LAST-MODIFIED:20270105T101500Z
    LOCATION:
    SEQUENCE:0
    STATUS:CONFIRMED
    SUMMARY:Sync
    TRANSP:OPAQUE
    BEGIN:VALARM
    ACTION:DISPLAY
    DESCRIPTION:This is an event reminder
    TRIGGER:-P0DT0H10M0S
    END:VALARM
    END:VEVENT
    END:VCALENDAR

    """)

    /// Thunderbird: X-MOZ- properties, CATEGORIES, an alarm RELATED=START, folded non-ASCII text.
    public static let thunderbirdHoliday = crlf("""
    BEGIN:VCALENDAR
    PRODID:-//Mozilla.org/NONSGML Mozilla Calendar V1.1//EN
    VERSION:2.0
    BEGIN:VEVENT
    CREATED:20260301T100000Z
    LAST-MODIFIED:20260301T100500Z
    DTSTAMP:20260301T100500Z
    UID:8b1e6a52-1c2d-4e3f-9a0b-1c2d3e4f5a6b
    SUMMARY:Fête nationale
    CATEGORIES:Jour férié,Holidays
    DTSTART;VALUE=DATE:20270714
    DTEND;VALUE=DATE:20270715
    TRANSP:TRANSPARENT
    X-MOZ-GENERATION:2
    DESCRIPTION:Commémoration de la prise de la Bastille — défilé sur les Champ
     s-Élysées le matin\\, feu d’artifice à la tour Eiffel le soir.
    X-MOZ-LASTACK:20260301T100500Z
    BEGIN:VALARM
    ACTION:DISPLAY
    TRIGGER;VALUE=DURATION;RELATED=START:-PT15H
    DESCRIPTION:Default Mozilla Description
    END:VALARM
    END:VEVENT
    END:VCALENDAR

    """)

    /// Nextcloud Calendar: its PRODID, COLOR, a folded URL, an inline image ATTACH (a 1×1 PNG), and Japanese
    /// text on a line of 99 octets folded only after it.
    public static let nextcloudHoliday = crlf("""
    BEGIN:VCALENDAR
    PRODID:-//IDN nextcloud.com//Calendar app 4.7.6//EN
    CALSCALE:GREGORIAN
    VERSION:2.0
    BEGIN:VEVENT
    CREATED:20260115T083000Z
    DTSTAMP:20260115T083200Z
    LAST-MODIFIED:20260115T083200Z
    SEQUENCE:2
    UID:c2a7c3f0-5b1e-4c9e-8d4a-0e6f7a8b9c0d
    DTSTART;VALUE=DATE:20270211
    DTEND;VALUE=DATE:20270212
    STATUS:CONFIRMED
    SUMMARY:建国記念の日
    COLOR:crimson
    URL:https://ja.wikipedia.org/wiki/%E5%BB%BA%E5%9B%BD%E8%A8%98%E5%BF%B5%E3%81
     %AE%E6%97%A5
    DESCRIPTION:日本の国民の祝日の一つ。建国をしのび、国を愛する心を養う日
     。
    CATEGORIES:JP
    ATTACH;ENCODING=BASE64;VALUE=BINARY;FMTTYPE=image/png;X-FILENAME=flag.png:iV
     BORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMI
     QAAAABJRU5ErkJggg==
    X-NC-GROUP-ID:0
    END:VEVENT
    END:VCALENDAR

    """)

    /// Nextcloud Tasks: a VTODO, which a holidays calendar cannot hold.
    public static let nextcloudTask = crlf("""
    BEGIN:VCALENDAR
    VERSION:2.0
    PRODID:-//Nextcloud Tasks v0.16.1
    BEGIN:VTODO
    UID:2c1f0e9d-8c7b-4a69-9584-736251403f2e
    CREATED:20260201T120000Z
    LAST-MODIFIED:20260201T120000Z
    DTSTAMP:20260201T120000Z
    SUMMARY:Buy flags
    DUE;VALUE=DATE:20270427
    STATUS:NEEDS-ACTION
    END:VTODO
    END:VCALENDAR

    """)

    /// Apple Contacts (vCard 3.0): a year-less birthday, grouped properties with X-ABLabel, a social profile
    /// with x-user, TYPE in lower case, an inline JPEG photo (its first bytes).
    public static let appleCard = crlf("""
    BEGIN:VCARD
    VERSION:3.0
    PRODID:-//Apple Inc.//macOS 14.5//EN
    N:Lovelace;Ada;;;
    FN:Ada Lovelace
    ORG:Analytical Engines Ltd.;
    EMAIL;type=INTERNET;type=HOME;type=pref:ada@example.org
    TEL;type=CELL;type=VOICE;type=pref:+44 20 7946 0018
    item1.ADR;type=HOME;type=pref:;;12 St James's Square;London;;SW1Y 4JH;United
      Kingdom
    item1.X-ABADR:gb
    BDAY;X-APPLE-OMIT-YEAR=1604:1604-12-10
    item2.X-SOCIALPROFILE;type=facebook;x-user=ada.lovelace:https://www.facebook
     .com/ada.lovelace
    item3.X-ABDATE;type=pref:1835-07-08
    item3.X-ABLabel:_$!<Anniversary>!$_
    NOTE:A first edition of Menabrea's notes\\, or a slide rule.
    PHOTO;ENCODING=b;TYPE=JPEG:/9j/4AAQSkZJRgABAQAASABIAAD/4QBMRXhpZgAATU0AKgAAA
     AgAAYdpAAQAAAABAAAAGgAAAAAAA6ABAAMAAAABAAEAAKACAAQAAAABAAAAAaADAAQAAAABAAAA
     AQAAAAD/7QA4UGhvdG9zaG9w
    REV:2026-04-12T08:15:02Z
    UID:D2E4F6A8-1B3C-4D5E-8F90-A1B2C3D4E5F6
    X-ABUID:D2E4F6A8-1B3C-4D5E-8F90-A1B2C3D4E5F6:ABPerson
    END:VCARD

    """)

    /// Google Contacts' vCard 3.0 export: a year-less birthday as `--MM-DD`, grouped EMAIL with X-ABLabel,
    /// no UID.
    public static let googleCard = crlf("""
    BEGIN:VCARD
    VERSION:3.0
    FN:Grace Hopper
    N:Hopper;Grace;;;
    EMAIL;TYPE=INTERNET;TYPE=HOME:grace@example.com
    item1.EMAIL;TYPE=INTERNET:admiral@example.navy.mil
    item1.X-ABLabel:Work
    TEL;TYPE=CELL:+1 202-555-0143
    BDAY:--12-09
    CATEGORIES:myContacts
    END:VCARD

    """)

    /// Nextcloud Contacts (sabre/vobject, vCard 4.0): a BDAY with a year, RFC 9554's SOCIALPROFILE, a data:
    /// URI photo, a TEL as a URI with quoted TYPE values.
    public static let nextcloudCard = crlf("""
    BEGIN:VCARD
    VERSION:4.0
    PRODID:-//Sabre//Sabre VObject 4.5.4//EN
    UID:5f4c7e2a-9b1d-4c3e-a5f6-7b8c9d0e1f2a
    FN:Alan Turing
    N:Turing;Alan;Mathison;;OBE
    BDAY:19120623
    EMAIL;TYPE=work:alan@example.ac.uk
    TEL;VALUE=uri;TYPE="voice,cell":tel:+44-161-496-0123
    SOCIALPROFILE;SERVICE-TYPE=Facebook:https://www.facebook.com/alan.turing
    NOTE:Chess set\\; a bicycle chain.
    PHOTO:data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADU
     lEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==
    REV:20260412T081502Z
    END:VCARD

    """)

    /// Thunderbird's address book (vCard 4.0): a year-less BDAY `--1210`.
    public static let thunderbirdCard = crlf("""
    BEGIN:VCARD
    VERSION:4.0
    PRODID:-//Thunderbird//EN
    UID:0c5e8d1a-2b3f-4a6c-9e7d-8f0a1b2c3d4e
    FN:Ada Lovelace
    N:Lovelace;Ada;;;
    BDAY:--1210
    EMAIL;PREF=1:ada@example.org
    END:VCARD

    """)

    public static let all: [(String, String)] = [
        ("Apple holiday", appleHoliday), ("Google yearly", googleYearly), ("Google meeting", googleMeeting),
        ("Thunderbird holiday", thunderbirdHoliday), ("Nextcloud holiday", nextcloudHoliday), ("Nextcloud task", nextcloudTask),
        ("Apple card", appleCard), ("Google card", googleCard), ("Nextcloud card", nextcloudCard), ("Thunderbird card", thunderbirdCard),
    ]
}
