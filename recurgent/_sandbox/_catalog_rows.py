"""The catalog's rows: every public name of every importable module, classified by a person.

Each row sorts a module's names into ``pure``, ``replaced``, ``attempt`` and ``denied`` (see
:class:`ModuleRows`); ``_catalog`` binds the stand-ins of the replaced names and serves the
result (ADR 0019). This module is data: adding a module means adding its row here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TABLE", "ModuleRows", "rows"]


@dataclass(frozen=True)
class ModuleRows:
    """The classification of one module's public names.

    Attributes:
        pure: Served as the module defines them.
        replaced: Served as these sealed stand-ins (name -> stand-in).
        attempt: Served as stand-ins the attempt builds (they need its tick or state).
        denied: Never served; listed so that the catalog is complete.
    """

    pure: frozenset[str]
    replaced: Mapping[str, Any]
    attempt: frozenset[str]
    denied: frozenset[str]

    @property
    def served(self) -> frozenset[str]:
        """Every name a facade of this module serves."""
        return self.pure | frozenset(self.replaced) | self.attempt


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def rows(*, pure: str = "", replaced: str = "", attempt: str = "", denied: str = "") -> ModuleRows:
    return ModuleRows(
        pure=_names(pure),
        replaced={name: name for name in _names(replaced)},
        attempt=_names(attempt),
        denied=_names(denied),
    )


#: Module name -> its classified names, as a person reviews them (stand-ins bound in ``_catalog``).
TABLE: dict[str, ModuleRows] = {
    "abc": rows(
        replaced="abstractmethod",
        attempt="ABC",
        # ABCMeta makes classes outside the sandbox's metaclass; the others write attributes
        # on classes they are given or are deprecated spellings (ADR 0048).
        denied="""
            ABCMeta abstractclassmethod abstractproperty abstractstaticmethod
            get_cache_token update_abstractmethods
            """,
    ),
    "base64": rows(
        pure="""
            MAXBINSIZE MAXLINESIZE a85decode a85encode b16decode b16encode b32decode
            b32encode b32hexdecode b32hexencode b64decode b64encode b85decode b85encode
            bytes_types decode decodebytes encode encodebytes standard_b64decode
            standard_b64encode urlsafe_b64decode urlsafe_b64encode
            """,
        denied="binascii main re struct test",
    ),
    "bisect": rows(
        pure="bisect bisect_left bisect_right insort insort_left insort_right",
    ),
    "calendar": rows(
        pure="""
            Calendar EPOCH FRIDAY February HTMLCalendar IllegalMonthError IllegalWeekdayError
            January MONDAY SATURDAY SUNDAY THURSDAY TUESDAY WEDNESDAY day_abbr day_name error
            firstweekday isleap leapdays mdays month_abbr month_name monthcalendar monthrange
            timegm weekday
            """,
        replaced="TextCalendar calendar formatstring month week weekheader",
        # c is the module's shared calendar (setfirstweekday changes it for the process);
        # pr*/format print to the host's stdout; the Locale* classes switch the process locale.
        denied="""
            LocaleHTMLCalendar LocaleTextCalendar c datetime different_locale format main
            prcal prmonth prweek repeat setfirstweekday sys
            """,
    ),
    "cmath": rows(
        pure="""
            acos acosh asin asinh atan atanh cos cosh e exp inf infj isclose isfinite isinf
            isnan log log10 nan nanj phase pi polar rect sin sinh sqrt tan tanh tau
            """,
    ),
    "collections": rows(
        pure="""
            ChainMap Counter OrderedDict UserDict UserList abc defaultdict deque namedtuple
            """,
        replaced="UserString",
    ),
    "collections.abc": rows(
        pure="""
            AsyncGenerator AsyncIterable AsyncIterator Awaitable ByteString Callable
            Collection Container Coroutine Generator Hashable ItemsView Iterable Iterator
            KeysView Mapping MappingView MutableMapping MutableSequence MutableSet
            Reversible Sequence Set Sized ValuesView
            """,
    ),
    "contextlib": rows(
        pure="ExitStack contextmanager nullcontext",
        # suppress never swallows the attempt's stop; closing reads close() through the
        # attempt's attribute policy (ADR 0105).
        replaced="suppress",
        attempt="closing",
        # redirect_*/chdir change the process (its stdout, its directory); the ABCs and
        # ContextDecorator are bases, not idioms; the async ones need an event loop.
        denied="""
            AbstractAsyncContextManager AbstractContextManager AsyncContextDecorator
            AsyncExitStack ContextDecorator GenericAlias MethodType abc aclosing
            asynccontextmanager chdir deque os redirect_stderr redirect_stdout sys wraps
            """,
    ),
    "copy": rows(
        pure="Error error",
        replaced="copy deepcopy",
        denied="dispatch_table",
    ),
    "csv": rows(
        pure="""
            Dialect DictReader DictWriter Error QUOTE_ALL QUOTE_MINIMAL QUOTE_NONE
            QUOTE_NONNUMERIC StringIO excel excel_tab get_dialect list_dialects reader
            unix_dialect writer
            """,
        # Sniffer matches its sample with regular expressions: re-hosted (ADR 0090).
        replaced="Sniffer",
        denied="field_size_limit re register_dialect unregister_dialect",
    ),
    "dataclasses": rows(
        pure="FrozenInstanceError KW_ONLY MISSING",
        replaced="Field asdict astuple dataclass field fields is_dataclass replace",
        # make_dataclass builds a class outside the sandbox's metaclass; InitVar is not
        # supported by the sandbox's dataclass; the rest are re-exported modules (ADR 0049).
        denied="""
            FunctionType GenericAlias InitVar abc builtins copy functools inspect itertools
            keyword make_dataclass re sys types
            """,
    ),
    "datetime": rows(
        pure="MAXYEAR MINYEAR UTC date datetime time timedelta timezone tzinfo",
        denied="datetime_CAPI sys",
    ),
    "decimal": rows(
        pure="""
            Clamped ConversionSyntax DecimalException DecimalTuple DivisionByZero
            DivisionImpossible DivisionUndefined FloatOperation HAVE_CONTEXTVAR HAVE_THREADS
            Inexact InvalidContext InvalidOperation MAX_EMAX MAX_PREC MIN_EMIN MIN_ETINY
            Overflow ROUND_05UP ROUND_CEILING ROUND_DOWN ROUND_FLOOR ROUND_HALF_DOWN
            ROUND_HALF_EVEN ROUND_HALF_UP ROUND_UP Rounded Subnormal Underflow
            """,
        replaced="Context Decimal getcontext localcontext setcontext",
        # Process-wide templates: a change would reach every thread's next context.
        denied="BasicContext DefaultContext ExtendedContext",
    ),
    "difflib": rows(
        pure="IS_CHARACTER_JUNK IS_LINE_JUNK",
        replaced="SequenceMatcher context_diff get_close_matches ndiff unified_diff",
        denied="Differ GenericAlias HtmlDiff Match diff_bytes restore",
    ),
    "email": rows(
        pure="utils",
        # The message parsers are a whole MIME stack: not an idiom of generated programs.
        denied="message_from_binary_file message_from_bytes message_from_file message_from_string",
    ),
    "email.utils": rows(
        pure="""
            COMMASPACE CRLF EMPTYSTRING TICK UEMPTYSTRING format_datetime formatdate
            localtime mktime_tz parseaddr parsedate parsedate_to_datetime parsedate_tz unquote
            """,
        # getaddresses converts its values to text; formataddr would look up any codec;
        # quote and formataddr escape up to twice their text (sizes checked first, R5 K3).
        replaced="formataddr getaddresses quote",
        # make_msgid asks the resolver for the host name; the rfc2231 helpers and Charset
        # are MIME internals; the rest are the modules and patterns it imports (ADR 0105).
        denied="""
            Charset collapse_rfc2231_value datetime decode_params decode_rfc2231
            encode_rfc2231 escapesre make_msgid os random re rfc2231_continuation socket
            specialsre time urllib
            """,
    ),
    "enum": rows(
        replaced="auto unique",
        attempt="Enum IntEnum StrEnum",
        # Flags, the real metaclass, member()/nonmember()/verify and the global_* helpers
        # are not part of the sandbox's enum (ADR 0049).
        denied="""
            CONFORM CONTINUOUS DynamicClassAttribute EJECT EnumCheck EnumMeta EnumType Flag
            FlagBoundary IntFlag KEEP MappingProxyType NAMED_FLAGS ReprEnum STRICT UNIQUE bin
            bltns global_enum global_enum_repr global_flag_repr global_str member nonmember
            pickle_by_enum_name pickle_by_global_name property reduce show_flag_values sys
            verify
            """,
    ),
    "fractions": rows(
        replaced="Decimal Fraction",
        denied="math numbers operator re sys",
    ),
    "functools": rows(
        pure="WRAPPER_ASSIGNMENTS WRAPPER_UPDATES cmp_to_key partial reduce",
        replaced="cache lru_cache total_ordering wraps",
        denied="""
            GenericAlias RLock cached_property get_cache_token namedtuple partialmethod
            recursive_repr singledispatch singledispatchmethod update_wrapper
            """,
    ),
    "graphlib": rows(
        pure="CycleError TopologicalSorter",
        denied="GenericAlias",
    ),
    "hashlib": rows(
        pure="""
            algorithms_available algorithms_guaranteed blake2b blake2s file_digest md5 sha1
            sha224 sha256 sha384 sha3_224 sha3_256 sha3_384 sha3_512 sha512
            """,
        replaced="new pbkdf2_hmac",
        denied="scrypt shake_128 shake_256",
    ),
    "heapq": rows(
        pure="heapify heappop heappush heappushpop heapreplace merge nlargest nsmallest",
    ),
    "html": rows(
        pure="parser unescape",
        # Its text counted first (red team R32).
        replaced="escape",
        denied="entities",
    ),
    "html.parser": rows(
        # Re-hosted onto the sandbox's regex engine (ADR 0090).
        replaced="HTMLParser",
        denied="""
            attrfind_tolerant charref commentclose endendtag endtagfind entityref incomplete
            interesting_normal locatestarttagend_tolerant piclose re starttagopen
            tagfind_tolerant unescape
            """,
    ),
    "io": rows(
        pure="BytesIO StringIO",
        denied="""
            BlockingIOError BufferedIOBase BufferedRWPair BufferedRandom BufferedReader
            BufferedWriter DEFAULT_BUFFER_SIZE FileIO IOBase IncrementalNewlineDecoder
            RawIOBase SEEK_CUR SEEK_END SEEK_SET TextIOBase TextIOWrapper
            UnsupportedOperation abc open open_code text_encoding
            """,
    ),
    "itertools": rows(
        attempt="""
            accumulate chain combinations combinations_with_replacement compress count cycle
            dropwhile filterfalse groupby islice pairwise permutations product repeat
            starmap takewhile tee zip_longest
            """,
    ),
    "json": rows(
        pure="JSONDecodeError detect_encoding load loads",
        # JSONEncoder: the sandbox's, whose text is always built in counted pieces (ADR 0105);
        # JSONDecoder: the sandbox's, whose default parse_int is the checked int (ADR 0129).
        replaced="JSONDecoder JSONEncoder dump dumps",
        denied="codecs decoder encoder scanner",
    ),
    "math": rows(
        pure="""
            acos acosh asin asinh atan atan2 atanh cbrt copysign cos cosh degrees dist
            e erf erfc exp exp2 expm1 fabs fmod frexp fsum gamma hypot inf isclose
            isfinite isinf isnan ldexp lgamma log log10 log1p log2 modf nan nextafter
            pi pow radians remainder sin sinh sqrt tan tanh tau ulp
            """,
        replaced="ceil comb factorial floor gcd isqrt lcm perm prod trunc",
    ),
    "numbers": rows(
        pure="Complex Integral Number Rational Real",
        denied="ABCMeta abstractmethod",
    ),
    "operator": rows(
        pure="""
            abs and_ call contains countOf delitem eq ge getitem gt
            iand imatmul index indexOf inv invert ior irshift is_ is_not
            isub itemgetter itruediv ixor le length_hint lt matmul ne neg not_ or_ pos
            rshift setitem sub truediv truth xor
            """,
        replaced="""
            add concat floordiv iadd iconcat ifloordiv ilshift imod imul ipow lshift mod mul
            pow
            """,
        attempt="attrgetter methodcaller",
    ),
    "pprint": rows(
        pure="saferepr",
        replaced="pformat",
        denied="PrettyPrinter isreadable isrecursive pp pprint re",
    ),
    "random": rows(
        pure="BPF LOG4 NV_MAGICCONST RECIP_BPF SG_MAGICCONST TWOPI",
        replaced="Random",
        attempt="""
            betavariate choice choices expovariate gammavariate gauss getrandbits
            lognormvariate normalvariate paretovariate randbytes randint random randrange
            sample seed shuffle triangular uniform vonmisesvariate weibullvariate
            """,
        denied="SystemRandom getstate setstate",
    ),
    "re": rows(
        pure="""
            A ASCII DEBUG DOTALL I IGNORECASE L LOCALE M MULTILINE NOFLAG S T TEMPLATE U
            UNICODE VERBOSE X
            """,
        replaced="""
            Match Pattern compile error escape findall finditer fullmatch match search split sub
            subn
            """,
        # RegexFlag: an enum class formats a value it refuses with %r in one C call, a shared
        # structure's text too (ADR 0092); its members (re.I, ...) are served.
        denied="RegexFlag Scanner copyreg enum functools purge template",
    ),
    "secrets": rows(
        pure="choice compare_digest randbelow",
        replaced="randbits token_bytes token_hex token_urlsafe",
        denied="DEFAULT_ENTROPY SystemRandom base64 binascii",
    ),
    "shlex": rows(
        # split refuses None (it would read the host's stdin); quote/join check sizes first.
        replaced="join quote split",
        # The shlex class follows `source` lines into files (sourcehook opens them).
        denied="StringIO deque os re shlex sys",
    ),
    "statistics": rows(
        pure="""
            Counter LinearRegression NormalDist StatisticsError bisect_left bisect_right
            defaultdict erf exp fabs fsum groupby hypot log mul namedtuple reduce repeat
            sqrt tau
            """,
        replaced="""
            Decimal Fraction correlation covariance fmean geometric_mean harmonic_mean
            linear_regression mean median median_grouped median_high median_low mode
            multimode pstdev pvariance quantiles stdev variance
            """,
        denied="math numbers random sys",
    ),
    "string": rows(
        pure="""
            ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits
            octdigits printable punctuation whitespace
            """,
        replaced="Template",
        denied="Formatter",
    ),
    "textwrap": rows(
        pure="dedent shorten",
        replaced="fill indent wrap",
        denied="TextWrapper re",
    ),
    "time": rows(
        pure="""
            altzone asctime ctime daylight gmtime localtime mktime monotonic monotonic_ns
            perf_counter perf_counter_ns process_time struct_time time time_ns
            timezone tzname
            """,
        # strptime compiles a pattern from the format: re-hosted (ADR 0090); strftime's text
        # is counted first (red team R32).
        replaced="strftime strptime",
        attempt="sleep",
        denied="""
            CLOCK_BOOTTIME CLOCK_MONOTONIC CLOCK_MONOTONIC_RAW CLOCK_PROCESS_CPUTIME_ID
            CLOCK_REALTIME CLOCK_TAI CLOCK_THREAD_CPUTIME_ID clock_getres clock_gettime
            clock_gettime_ns clock_settime clock_settime_ns get_clock_info process_time_ns
            pthread_getcpuclockid thread_time thread_time_ns tzset
            """,
    ),
    "typing": rows(
        pure="""
            AbstractSet Annotated Any AnyStr AsyncContextManager AsyncGenerator AsyncIterable
            AsyncIterator Awaitable BinaryIO ByteString CT_co Callable ChainMap ClassVar
            Collection Concatenate Container ContextManager Coroutine Counter DefaultDict
            Deque Dict Final FrozenSet Generator Generic Hashable IO ItemsView Iterable
            Iterator KT KeysView List Literal LiteralString Mapping MappingView Match
            MutableMapping MutableSequence MutableSet NamedTuple Never NewType NoReturn
            NotRequired Optional OrderedDict ParamSpec ParamSpecArgs ParamSpecKwargs Pattern
            Protocol Required Reversible Self Sequence Set Sized SupportsAbs SupportsBytes
            SupportsComplex SupportsFloat SupportsIndex SupportsInt SupportsRound T
            TYPE_CHECKING T_co T_contra Text TextIO Tuple Type TypeAlias TypeGuard TypeVar
            TypeVarTuple TypedDict Union Unpack VT VT_co V_co ValuesView assert_never
            assert_type cast defaultdict get_args get_origin
            """,
        # runtime_checkable marks the program's own protocols only; is_typeddict knows the
        # program's TypedDict classes (ADR 0104).
        replaced="abstractmethod is_typeddict runtime_checkable",
        # final, no_type_check and dataclass_transform set attributes on
        # whatever they are given (a host class too); overload fills a process-wide registry;
        # get_type_hints evaluates strings; reveal_type writes to the host's stderr.
        denied="""
            ABCMeta EXCLUDED_ATTRIBUTES ForwardRef GenericAlias MethodDescriptorType
            MethodWrapperType NamedTupleMeta WrapperDescriptorType clear_overloads collections
            contextlib dataclass_transform final functools get_overloads get_type_hints io
            no_type_check no_type_check_decorator operator overload re reveal_type
            stdlib_re sys types warnings
            """,
    ),
    "unicodedata": rows(
        pure="""
            UCD bidirectional category combining decimal decomposition digit
            east_asian_width is_normalized lookup mirrored name numeric ucd_3_2_0
            unidata_version
            """,
        replaced="normalize",
    ),
    "urllib": rows(
        pure="error parse request",
        denied="response",
    ),
    "urllib.error": rows(
        attempt="HTTPError URLError",
    ),
    "urllib.parse": rows(
        pure="""
            DefragResult DefragResultBytes ParseResult ParseResultBytes ResultBase
            SplitResult SplitResultBytes namedtuple non_hierarchical parse_qs parse_qsl
            quote_from_bytes scheme_chars splitattr splithost splitnport splitpasswd
            splitport splitquery splittag splittype splituser splitvalue to_bytes unquote
            unquote_plus unquote_to_bytes unwrap urldefrag urljoin urlparse urlsplit
            urlunparse urlunsplit uses_fragment uses_netloc uses_params uses_query
            uses_relative
            """,
        # quote, quote_plus and urlencode encode their text: checked (red team R26).
        replaced="quote quote_plus urlencode",
        denied="clear_cache functools ipaddress re sys types warnings",
    ),
    "urllib.request": rows(
        attempt="HTTPError Request URLError urlopen",
    ),
    "uuid": rows(
        pure="""
            NAMESPACE_DNS NAMESPACE_OID NAMESPACE_URL NAMESPACE_X500 RESERVED_FUTURE
            RESERVED_MICROSOFT RESERVED_NCS RFC_4122 UUID bytes_ int_ uuid3 uuid4 uuid5
            """,
        # SafeUUID: an enum class, as re.RegexFlag (ADR 0092).
        denied="Enum SafeUUID getnode os platform sys uuid1",
    ),
    "zoneinfo": rows(
        # ZoneInfo reads the system tz database (keys are validated: no paths); the cache
        # and search path are process-wide, so reset_tzpath is denied and so is
        # ZoneInfo.clear_cache (in the guard's per-type denials), and ZoneInfo is served
        # gated, its key exact (ADR 0091).
        pure="InvalidTZPathWarning TZPATH ZoneInfoNotFoundError available_timezones",
        replaced="ZoneInfo",
        denied="reset_tzpath",
    ),
    "xml": rows(
        pure="etree",
    ),
    "xml.etree": rows(
        pure="ElementTree",
        denied="ElementPath",
    ),
    "xml.etree.ElementTree": rows(
        pure="""
            C14NWriterTarget Comment Element HTML_EMPTY PI ParseError ProcessingInstruction
            SubElement TreeBuilder VERSION XML XMLID XMLParser fromstring fromstringlist
            iselement
            """,
        # QName formats and hashes whatever it holds: served for text only (ADR 0092);
        # tostring escapes in one C call per text, counted first (ADR 0153).
        replaced="ElementTree QName indent parse tostring tostringlist",
        denied="""
            ElementPath XMLPullParser canonicalize collections contextlib dump io iterparse
            re register_namespace sys warnings
            """,
    ),
}
