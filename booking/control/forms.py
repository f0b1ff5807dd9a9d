"""Forms of the staff site. They check what a person typed and explain mistakes next to the
field; the rules themselves stay in the engine (layouts.parse_grid, sessions.clean_details,
session_prices.clean_prices), whose messages are shown as they are."""

from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, cast

from django import forms
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy

from booking.control.selectors import SessionsShown
from booking.core import clock, json_text
from booking.core.domain import Layout
from booking.core.errors import InvalidLayout, InvalidRequest
from booking.sales.seasons import Plan, plan_dates
from booking.sales.sessions import clean_details, clean_sale_window
from booking.venues.layouts import category_codes_used, parse_grid, validate_layout, validate_sections
from booking.web.forms import DayField

MAX_PRICE = Decimal("10000.00")  # in currency units; the engine stores integer cents
CATEGORY_ROWS = 6
MAX_IMPORT_BYTES = 2_000_000


def form_data(data: dict[str, Any] | None) -> dict[str, Any]:
    """What ``Form.clean()`` returned: Django's returns ``cleaned_data`` (the stubs allow None, for
    overrides that return nothing)."""
    return cast(dict[str, Any], data)


class CategoryForm(forms.Form):
    code = forms.CharField(
        max_length=1,
        required=False,
        widget=forms.TextInput(attrs={"size": 2, "class": "cat-code", "aria-label": gettext_lazy("Letter")}),
    )
    name = forms.CharField(
        max_length=40,
        required=False,
        widget=forms.TextInput(attrs={"size": 16, "aria-label": gettext_lazy("Category name")}),
    )
    name_de = forms.CharField(  # shown to buyers on German pages (booking/core/localized.py); empty: the name
        max_length=40,
        required=False,
        widget=forms.TextInput(attrs={"size": 16, "aria-label": gettext_lazy("Category name in German (optional)")}),
    )
    color = forms.CharField(
        max_length=7,
        required=False,
        initial="#3b82f6",
        widget=forms.TextInput(attrs={"type": "color", "aria-label": gettext_lazy("Colour")}),
    )

    def clean_code(self):
        return (self.cleaned_data.get("code") or "").strip().lower()

    def clean(self):
        data = form_data(super().clean())
        if data.get("code") and not (data.get("name") or "").strip():
            self.add_error("name", gettext("Give this category a name."))
        if (data.get("name") or "").strip() and not data.get("code"):
            self.add_error("code", gettext("Give this category a letter."))
        return data


CategoryFormSet = forms.formset_factory(CategoryForm, extra=0, min_num=CATEGORY_ROWS, max_num=CATEGORY_ROWS)


def category_initial(categories: list[dict] | None) -> list[dict]:
    rows = [
        {"code": c["code"], "name": c["name"], "name_de": c.get("nameDe", ""), "color": c.get("color", "#3b82f6")}
        for c in categories or []
    ]
    defaults = ["#3b82f6", "#a855f7", "#10b981", "#f59e0b", "#ef4444", "#14b8a6"]
    while len(rows) < CATEGORY_ROWS:
        rows.append({"code": "", "name": "", "name_de": "", "color": defaults[len(rows) % len(defaults)]})
    return rows[:CATEGORY_ROWS]


def categories_from(formset) -> list[dict]:
    """The filled-in category rows of a valid formset, in order."""
    return [
        {
            "code": f.cleaned_data["code"],
            "name": f.cleaned_data["name"].strip(),
            **({"nameDe": f.cleaned_data["name_de"].strip()} if (f.cleaned_data.get("name_de") or "").strip() else {}),
            "color": f.cleaned_data["color"],
        }
        for f in formset.forms
        if f.cleaned_data.get("code")
    ]


def theater_name_de_field() -> forms.CharField:
    """A theater's (or a sectioned venue's) German name: German pages show it (booking/core/localized.py)."""
    return forms.CharField(
        label=gettext_lazy("Name in German"),
        max_length=100,
        required=False,
        widget=forms.TextInput(attrs={"size": 40, "lang": "de"}),
        help_text=gettext_lazy("Optional. Shown to buyers reading the site in German; empty: the name above."),
    )


class TheaterForm(forms.Form):
    """Name and the text grid. The layout is parsed in ``clean_with`` because it needs the
    categories from the formset beside it."""

    name = forms.CharField(
        label=gettext_lazy("Name"), max_length=100, widget=forms.TextInput(attrs={"size": 40, "autofocus": True})
    )
    name_de = theater_name_de_field()
    grid = forms.CharField(
        label=gettext_lazy("Seating plan"),
        widget=forms.Textarea(attrs={"rows": 14, "cols": 60, "class": "layout-grid", "spellcheck": "false"}),
        help_text=gettext_lazy(
            "One line per row, front row first, starting with the row label and a colon. "
            "One character per place: a category letter is a seat, its capital a wheelchair space, "
            "a dot is a gap (aisle, pillar)."
        ),
    )

    def clean_with(self, categories: list[dict]) -> Layout | None:
        """Parse the grid with these categories; a mistake becomes an error on the grid field.
        Returns the layout, or None."""
        if not self.is_valid():
            return None
        try:
            return parse_grid(self.cleaned_data["grid"], categories)
        except InvalidLayout as exc:
            self.layout_error = exc
            self.add_error("grid", exc.message)
            return None


class LayoutImportForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("Name"),
        max_length=100,
        required=False,
        help_text=gettext_lazy("Leave empty to use the name stored in the file."),
    )
    file = forms.FileField(required=False, label=gettext_lazy("JSON file"))
    text = forms.CharField(
        required=False,
        label=gettext_lazy("…or paste the JSON"),
        widget=forms.Textarea(attrs={"rows": 8, "cols": 60, "class": "layout-grid"}),
    )

    def clean(self):
        data = form_data(super().clean())
        upload = data.get("file")
        if upload is not None:
            if upload.size > MAX_IMPORT_BYTES:
                self.add_error("file", gettext("This file is too big for a layout (at most 2 MB)."))
                return data
            raw = upload.read()
            field = "file"
        else:
            raw = (data.get("text") or "").encode()
            field = "text"
        if not raw.strip():
            raise forms.ValidationError(gettext("Choose a JSON file or paste the JSON of a layout."))
        try:
            doc = json_text.loads(raw, parse_constant=_not_json)
        except RecursionError:
            self.add_error(field, TOO_DEEP)
            return data
        except json_text.NotText:
            self.add_error(field, NOT_TEXT)
            return data
        except (ValueError, UnicodeDecodeError) as exc:
            self.add_error(field, gettext("This is not valid JSON (%(error)s).") % {"error": str(exc)[:120]})
            return data
        if nested_deeper_than(doc, MAX_IMPORT_DEPTH):
            self.add_error(field, TOO_DEEP)
            return data
        try:
            if isinstance(doc, dict) and "sections" in doc and "layout" not in doc:
                data["sections"] = validate_sections(doc["sections"])  # a sectioned venue (a stadium)
            else:
                data["layout"] = validate_layout(doc.get("layout", doc) if isinstance(doc, dict) else doc)
        except InvalidLayout as exc:
            self.add_error(field, exc.message)
            return data
        name = (data.get("name") or "").strip() or (doc.get("name") if isinstance(doc, dict) else "") or ""
        if not isinstance(name, str):
            self.add_error("name", gettext("The name in the file is not text; give the theater a name."))
        elif not name.strip():
            self.add_error("name", gettext("The file has no name in it; give the theater a name."))
        data["name"] = str(name).strip()
        german = doc.get("nameDe") if isinstance(doc, dict) else ""  # an exported theater's German name
        data["name_de"] = german if isinstance(german, str) else ""
        return data


# A layout file is six levels deep (document, layout, rows, a row, its cells, a cell). Anything
# much deeper is not a layout, and checking it (or printing it in a message) could recurse too far.
MAX_IMPORT_DEPTH = 10
TOO_DEEP = gettext_lazy("This JSON is nested too deeply to be a layout.")
NOT_TEXT = gettext_lazy("This JSON has a character that is not text in it (a lone surrogate such as \\ud800).")


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a number JSON allows")


def nested_deeper_than(value, limit: int) -> bool:
    """Whether parsed JSON nests lists and objects more than ``limit`` deep (iteratively, so a
    value of any depth is safe to ask about)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def to_cents(amount: Decimal) -> int:
    return int((amount * 100).to_integral_value())


def from_cents(cents: int) -> Decimal:
    return (Decimal(cents) / 100).quantize(Decimal("0.01"))


class LocalDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%dT%H:%M")


DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]


class LocalDateTimeField(forms.DateTimeField):
    """A date and time in the site's time zone, as every staff form takes one. Near the ends of
    Python's calendar (the years 1 and 9999) moving it to UTC, as storing or comparing it does,
    overflows: like ``DayField`` the field takes the years 1900 to 9998 and explains the rest."""

    def __init__(self, *, input_formats=DATETIME_FORMATS, widget=None, **kwargs):
        super().__init__(input_formats=input_formats, widget=widget or LocalDateTimeInput(), **kwargs)

    def validate(self, value):
        super().validate(value)
        if value is not None:
            DayField.check_in_range(value.date())


def price_field(name: str) -> forms.DecimalField:
    return forms.DecimalField(
        label=gettext("Price: %(category)s") % {"category": name},
        max_digits=8,
        decimal_places=2,
        min_value=Decimal("0"),
        max_value=MAX_PRICE,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0", "class": "price"}),
        error_messages={
            "min_value": gettext_lazy("A price cannot be below zero."),
            "max_value": gettext_lazy(
                "That is more than any seat costs here (at most 10,000.00). Check the decimal point."
            ),
            "max_decimal_places": gettext_lazy("Use at most two decimals (cents)."),
            "invalid": gettext_lazy("Enter an amount such as 25.50."),
        },
        help_text=gettext_lazy("e.g. 25.50"),
    )


class PricedForm(forms.Form):
    """Adds one price field per seat category the layout uses (price_<code>)."""

    def __init__(self, *args, layout: Layout, **kwargs):
        super().__init__(*args, **kwargs)
        names = {c["code"]: c["name"] for c in layout["categories"]}
        self.price_codes = category_codes_used(layout)
        for code in self.price_codes:
            self.fields[f"price_{code}"] = price_field(names[code])

    def price_fields(self):
        return [self[f"price_{code}"] for code in self.price_codes]

    def prices_in_cents(self) -> dict[str, int]:
        return {code: to_cents(self.cleaned_data[f"price_{code}"]) for code in self.price_codes}

    @staticmethod
    def price_initial(prices: dict[str, int]) -> dict:
        return {f"price_{code}": from_cents(cents) for code, cents in prices.items()}


class SessionForm(PricedForm):
    name = forms.CharField(label=gettext_lazy("Show name"), max_length=120, widget=forms.TextInput(attrs={"size": 50}))
    description = forms.CharField(
        label=gettext_lazy("Description"),
        max_length=2000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
    )
    start = LocalDateTimeField(label=gettext_lazy("Start"))
    end = LocalDateTimeField(label=pgettext_lazy("when a performance ends", "End"))
    # German pages show these when set, else the name and description above (booking/core/localized.py)
    name_de = forms.CharField(
        label=gettext_lazy("Show name in German"),
        max_length=120,
        required=False,
        widget=forms.TextInput(attrs={"size": 50, "lang": "de"}),
        help_text=gettext_lazy("Optional. Shown to buyers reading the site in German; empty: the name above."),
    )
    description_de = forms.CharField(
        label=gettext_lazy("Description in German"),
        max_length=2000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60, "lang": "de"}),
        help_text=gettext_lazy("Optional. Empty: German pages show the description above."),
    )

    def clean(self):
        data = form_data(super().clean())
        if all(k in data for k in ("name", "start", "end")):
            try:
                clean_details(
                    data["name"],
                    data.get("description", ""),
                    data["start"],
                    data["end"],
                    now=clock.now(),
                    name_de=data.get("name_de", ""),
                    description_de=data.get("description_de", ""),
                )
            except InvalidRequest as exc:
                add_field_errors(self, exc)
        return data

    def session_details(self) -> dict:
        """The keyword arguments of the engine's create_session / update_session_details."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "description": data["description"],
            "name_de": data.get("name_de", ""),
            "description_de": data.get("description_de", ""),
            "start": data["start"],
            "end": data["end"],
            "prices": self.prices_in_cents(),
        }


class SecondsDateTimeInput(forms.DateTimeInput):
    """A local date and time to the second (an on-sale time is announced to the second)."""

    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__({"step": "1", **(attrs or {})}, format="%Y-%m-%dT%H:%M:%S")


SALE_TIME_FORMATS = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]


class SaleWindowForm(forms.Form):
    """Draft or published, and when seats can be held (sales.sessions.set_sale_window)."""

    published = forms.TypedChoiceField(
        label=gettext_lazy("Visibility"),
        choices=[("1", gettext_lazy("Published (in what's on)")), ("0", gettext_lazy("Draft (staff only)"))],
        coerce=lambda v: v == "1",
        widget=forms.RadioSelect,
    )
    sale_opens = LocalDateTimeField(
        label=gettext_lazy("On sale from"),
        required=False,
        widget=SecondsDateTimeInput(),
        input_formats=SALE_TIME_FORMATS,
        help_text=gettext_lazy("Empty: on sale as soon as it is published."),
    )
    sale_closes = LocalDateTimeField(
        label=gettext_lazy("Off sale at"),
        required=False,
        widget=SecondsDateTimeInput(),
        input_formats=SALE_TIME_FORMATS,
        help_text=gettext_lazy("Empty: at the start."),
    )
    presale_opens = LocalDateTimeField(
        label=gettext_lazy("Members' presale from"),
        required=False,
        widget=SecondsDateTimeInput(),
        input_formats=SALE_TIME_FORMATS,
        help_text=gettext_lazy("Empty: no presale. Ends at the public on-sale time."),
    )
    presale_code = forms.CharField(
        label=gettext_lazy("Members' access code"),
        required=False,
        max_length=64,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=gettext_lazy(
            "Stored hashed. Leave empty to keep the current code; a new code locks out the old one."
        ),
    )

    def __init__(self, *args, start=None, has_code=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.start, self.has_code = start, has_code

    def clean(self):
        data = form_data(super().clean())
        if self.start is not None and not self.errors:
            try:
                clean_sale_window(
                    self.start,
                    data.get("sale_opens"),
                    data.get("sale_closes"),
                    data.get("presale_opens"),
                    has_code=bool(data.get("presale_code") or self.has_code),
                )
            except InvalidRequest as exc:
                add_field_errors(self, exc)
        return data


class QuotaForm(forms.Form):
    """At most so many seats held or sold for one performance (sales.quotas.set_quota)."""

    quota = forms.IntegerField(
        label=gettext_lazy("Quota (seats)"),
        required=False,
        help_text=gettext_lazy(
            "At most this many seats held or sold, through every channel; house seats do not count. "
            "Empty: no quota, the whole hall. A quota below what is already taken takes nothing "
            "away: no more seats are sold until enough are given back."
        ),
    )

    def __init__(self, *args, seats_total: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["quota"].widget.attrs["max"] = seats_total  # the service checks it (quotas.clean_quota)


def add_field_errors(form: forms.Form, exc: InvalidRequest) -> None:
    """Put an engine error's per-field messages next to the fields (or on top of the form)."""
    fields = exc.details.get("fields") or {}
    if not fields:
        form.add_error(None, exc.message)
    for field, message in fields.items():
        form.add_error(field if field in form.fields else None, message)


WEEKDAYS = [
    ("0", gettext_lazy("Mon")),
    ("1", gettext_lazy("Tue")),
    ("2", gettext_lazy("Wed")),
    ("3", gettext_lazy("Thu")),
    ("4", gettext_lazy("Fri")),
    ("5", gettext_lazy("Sat")),
    ("6", gettext_lazy("Sun")),
]


def parse_times(text: str) -> list[time] | None:
    """ "15:00, 19:30" -> the times; None when one of them is not a time of day."""
    found = []
    for part in text.replace(";", ",").replace(" ", ",").split(","):
        if not part:
            continue
        try:
            found.append(datetime.strptime(part, "%H:%M").time())
        except ValueError:
            return None
    return found


def parse_dates(text: str) -> list[date] | None:
    found = []
    for part in text.replace(";", ",").replace("\n", ",").replace(" ", ",").split(","):
        if not part.strip():
            continue
        try:
            found.append(date.fromisoformat(part.strip()))
        except ValueError:
            return None
    return found


class SeriesForm(PricedForm):
    """A season: the same show on many days, at one or more times per picked weekday, with dates
    skipped; one draft session per performance with the same price table, sale window and
    box-office setting (sales/seasons.py)."""

    name = forms.CharField(label=gettext_lazy("Show name"), max_length=120, widget=forms.TextInput(attrs={"size": 50}))
    name_de = forms.CharField(
        label=gettext_lazy("Show name in German"),
        max_length=120,
        required=False,
        widget=forms.TextInput(attrs={"size": 50, "lang": "de"}),
        help_text=gettext_lazy("Optional. Shown to buyers reading the site in German; empty: the name above."),
    )
    description = forms.CharField(
        label=gettext_lazy("Description"),
        max_length=2000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )
    first_day = DayField(label=gettext_lazy("First day"), widget=forms.DateInput(attrs={"type": "date"}))
    last_day = DayField(label=gettext_lazy("Last day"), widget=forms.DateInput(attrs={"type": "date"}))
    weekdays = forms.MultipleChoiceField(
        label=gettext_lazy("Weekdays"),
        choices=WEEKDAYS,
        widget=forms.CheckboxSelectMultiple(attrs={"class": "weekdays"}),  # none ticked: staff choose the days
        error_messages={"required": gettext_lazy("Choose at least one day of the week.")},
    )
    start_time = forms.TimeField(
        label=gettext_lazy("Starts at"),
        required=False,
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        initial="19:30",
        help_text=gettext_lazy("For every picked day without times of its own below."),
    )
    duration = forms.IntegerField(
        label=gettext_lazy("Duration (minutes)"),
        min_value=1,
        max_value=24 * 60,
        initial=150,
        error_messages={"max_value": gettext_lazy("A performance cannot last longer than 24 hours (1440 minutes).")},
    )
    skip_dates = forms.CharField(
        label=gettext_lazy("Dates skipped"),
        required=False,
        max_length=4000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40}),
        help_text=gettext_lazy("Days without a performance, e.g. 2026-12-24, 2026-12-31."),
    )
    sale_opens = LocalDateTimeField(
        label=gettext_lazy("On sale from"),
        required=False,
        widget=SecondsDateTimeInput(),
        input_formats=SALE_TIME_FORMATS,
        help_text=gettext_lazy("Empty: on sale as soon as it is published."),
    )
    box_office = forms.BooleanField(label=gettext_lazy("Pay at the box office"), required=False)
    box_office_minutes = forms.IntegerField(
        label=gettext_lazy("Unpaid seats go back (minutes before the show)"),
        required=False,
        min_value=0,
        max_value=7 * 24 * 60,
        initial=settings.BOOKING_BOX_OFFICE_DEADLINE_MINUTES,
    )

    def __init__(self, *args, layout: Layout, ticket_types: list[dict] | None = None, **kwargs):
        super().__init__(*args, layout=layout, **kwargs)
        names = {c["code"]: c["name"] for c in layout["categories"]}
        self.other_types = [t for t in ticket_types or [] if t["code"] != "full"]
        self.type_price_names: list[tuple[dict, list[str]]] = []
        for kind in self.other_types:
            row = []
            for code in self.price_codes:
                field_name = f"tprice_{kind['code']}_{code}"
                field = price_field(f"{kind['name']} – {names[code]}")
                field.required = False
                field.help_text = gettext_lazy("Empty: not offered in this category.")
                self.fields[field_name] = field
                row.append(field_name)
            self.type_price_names.append((kind, row))
        for value, label in WEEKDAYS:
            self.fields[f"times_{value}"] = forms.CharField(
                label=label,
                required=False,
                max_length=100,
                widget=forms.TextInput(attrs={"size": 12, "class": "day-times"}),
            )
        self.planned: list[tuple[datetime, datetime]] = []

    def day_time_fields(self):
        return [self[f"times_{value}"] for value, _ in WEEKDAYS]

    def type_price_rows(self):
        return [(kind, [self[name] for name in row]) for kind, row in self.type_price_names]

    def clean(self):
        data = form_data(super().clean())
        times: dict[int, list[time]] = {}
        for day in data.get("weekdays") or []:
            own = parse_times(data.get(f"times_{day}", ""))
            if own is None:
                self.add_error(f"times_{day}", gettext("Enter times such as 15:00, 19:30."))
                continue
            default = [data["start_time"]] if data.get("start_time") else []
            times[int(day)] = own or default
        skip = parse_dates(data.get("skip_dates", ""))
        if skip is None:
            self.add_error("skip_dates", gettext("Enter dates such as 2026-12-24, separated by commas."))
        first, last = data.get("first_day"), data.get("last_day")
        if first and last and not self.errors:
            if last >= first and first < timezone.localdate():
                self.add_error("first_day", gettext("The first day is in the past."))
                return data
            plan = Plan(first, last, times, set(skip or []), data.get("duration") or 150)
            try:
                self.planned = plan_dates(plan=plan)
            except InvalidRequest as exc:
                add_field_errors(self, exc)
        return data

    def performances(self) -> list[tuple[datetime, datetime]]:
        """(start, end) of each performance, aware in the site's time zone (DST handled)."""
        return self.planned

    def type_prices_in_cents(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {}
        for kind, row in self.type_price_names:
            for name in row:
                value = self.cleaned_data.get(name)
                if value is not None:
                    table.setdefault(kind["code"], {})[name.rsplit("_", 1)[1]] = to_cents(value)
        return table

    def box_office_setting(self) -> dict:
        minutes = self.cleaned_data.get("box_office_minutes")
        if minutes is None:
            minutes = settings.BOOKING_BOX_OFFICE_DEADLINE_MINUTES
        return {"enabled": self.cleaned_data["box_office"], "deadlineMinutes": minutes}

    def season_content(self) -> dict:
        """What makes two submits the same season (its key, sales/seasons.py)."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "nameDe": data.get("name_de", ""),
            "description": data.get("description", ""),
            "starts": [start.isoformat() for start, _ in self.planned],
            "duration": data["duration"],
            "prices": self.prices_in_cents(),
            "typePrices": self.type_prices_in_cents(),
            "saleOpens": data.get("sale_opens"),
            "boxOffice": self.box_office_setting(),
        }


class PickTheaterForm(forms.Form):
    theater = forms.ChoiceField(label=gettext_lazy("Theater"))

    def __init__(self, *args, choices, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["theater"]).choices = choices


WHEN_CHOICES = [
    (SessionsShown.ON_SALE, gettext_lazy("On sale")),
    (SessionsShown.PAST, gettext_lazy("Past")),
    (SessionsShown.CANCELED, gettext_lazy("Canceled")),
    (SessionsShown.ALL, gettext_lazy("All")),
]


class SessionFilterForm(forms.Form):
    theater = forms.ChoiceField(required=False, label=gettext_lazy("Theater"))
    day = DayField(required=False, label=gettext_lazy("Date"), widget=forms.DateInput(attrs={"type": "date"}))
    when = forms.ChoiceField(required=False, choices=WHEN_CHOICES, label=gettext_lazy("Show"))

    def __init__(self, *args, theater_choices, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["theater"]).choices = [("", gettext("All theaters")), *theater_choices]
        for name, field in self.fields.items():  # the filter shows each label as a <summary>, not a <label>
            field.widget.attrs.setdefault("aria-label", self[name].label)


class SeatSelectionForm(forms.Form):
    action = forms.ChoiceField(choices=[("block", gettext_lazy("Block")), ("unblock", gettext_lazy("Unblock"))])
    seats = forms.MultipleChoiceField(
        choices=[], error_messages={"required": gettext_lazy("Tick at least one seat first.")}, required=True
    )

    def __init__(self, *args, seat_keys, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["seats"]).choices = [(k, k) for k in seat_keys]
        self.fields["seats"].error_messages["invalid_choice"] = gettext("That seat is not on this map.")

    def coordinates(self) -> list[tuple[int, int]]:
        # The choices are the "row:col" seat keys, so each is a pair.
        return [cast(tuple[int, int], tuple(int(p) for p in key.split(":"))) for key in self.cleaned_data["seats"]]


class CancelSessionForm(forms.Form):
    cancel_orders = forms.BooleanField(
        required=False, label=gettext_lazy("Also cancel the paid orders of this session (their seats become free)")
    )
    message = forms.CharField(
        required=False,
        label=gettext_lazy("Message to the buyers (English)"),
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text=gettext_lazy("In the mail each buyer gets, e.g. why and what comes instead."),
    )
    message_de = forms.CharField(
        required=False,
        label=gettext_lazy("Message to the buyers (German)"),
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text=gettext_lazy("Buyers who booked in German read this one; empty: the English one."),
    )
    kept_per_ticket = forms.DecimalField(
        required=False,
        min_value=Decimal(0),
        max_digits=9,
        decimal_places=2,
        label=gettext_lazy("Fee kept per ticket"),
        help_text=gettext_lazy("Refunded: each ticket's price less this fee (never less than nothing). Empty: all."),
    )

    def terms(self) -> dict:
        """The cancel's words and fee, as the service takes them."""
        data = self.cleaned_data
        kept = data.get("kept_per_ticket")
        return {
            "message": data.get("message", ""),
            "message_de": data.get("message_de", ""),
            "kept_per_ticket": to_cents(kept) if kept is not None else 0,
        }


class CancelOrderForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("Reason"),
        max_length=200,
        widget=forms.TextInput(attrs={"size": 50}),
        help_text=gettext_lazy("Kept with the order, e.g. 'customer called, cannot come'."),
    )
    # the cancellation page's token: staff saw what canceling does before it is done
    confirmation = forms.CharField(
        max_length=500,
        widget=forms.HiddenInput,
        error_messages={
            "required": gettext_lazy("Open the cancellation page of this order and confirm there; nothing was changed.")
        },
    )


class CustomerForm(forms.Form):
    """The customer's name and e-mail as corrected, beside those the page showed (the rules are
    in sales/customer_edits.py)."""

    name = forms.CharField(max_length=400, label=gettext_lazy("Customer name"))
    email = forms.CharField(max_length=400, required=False, label=gettext_lazy("E-mail"))
    seen_name = forms.CharField(max_length=400, required=False, strip=False, widget=forms.HiddenInput)
    seen_email = forms.CharField(max_length=400, required=False, strip=False, widget=forms.HiddenInput)
    resend = forms.BooleanField(required=False, label=gettext_lazy("Send the confirmation mail to this address"))


class ResendMailForm(forms.Form):
    """The mail round the page showed: a double click, or two staff members, re-send it once."""

    round = forms.IntegerField(min_value=0, max_value=10**6, widget=forms.HiddenInput)
