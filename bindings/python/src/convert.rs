//! Arguments from Python to the engine, results from the engine to Python.
//!
//! Arguments: Python values become `serde_json::Value` by a direct walk
//! (`dict`, `list`, `tuple`, `str`, `int`, `float`, `bool`, `None`), with
//! errors that name the argument and the path inside it. Results: the engine
//! hands over JSON text (a tool result exactly as the server sent it), which
//! is parsed straight into plain `dict`/`list`/`str`/... objects (no
//! intermediate tree, no Python-level parser); `json.loads` is the fallback
//! for what that parser refuses (nesting deeper than 128 levels).

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::errors;

/// Deepest nesting accepted in arguments (deeper is almost surely a cycle).
const MAX_DEPTH: usize = 100;

static JSON_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// JSON text to Python objects (what `json.loads` gives).
pub fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let mut de = serde_json::Deserializer::from_str(text);
    match PySeed(py)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
    {
        Ok(value) => Ok(value),
        Err(_) => JSON_LOADS
            .import(py, "json", "loads")?
            .call1((PyString::new(py, text),)),
    }
}

/// Builds Python objects while serde_json parses.
#[derive(Clone, Copy)]
struct PySeed<'py>(Python<'py>);

impl<'de, 'py> DeserializeSeed<'de> for PySeed<'py> {
    type Value = Bound<'py, PyAny>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// Object keys as Python `str`.
struct KeySeed<'py>(Python<'py>);

impl<'de, 'py> DeserializeSeed<'de> for KeySeed<'py> {
    type Value = Bound<'py, PyString>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'py> Visitor<'_> for KeySeed<'py> {
    type Value = Bound<'py, PyString>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(PyString::new(self.0, v))
    }
}

impl<'de, 'py> Visitor<'de> for PySeed<'py> {
    type Value = Bound<'py, PyAny>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(PyBool::new(self.0, v).to_owned().into_any())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(PyInt::new(self.0, v).into_any())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(PyInt::new(self.0, v).into_any())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // serde_json reads an integer beyond 64 bits as a float; Python keeps
        // it exact, so leave such numbers to `json.loads`.
        if v.fract() == 0.0 && v.abs() >= 9.2e18 {
            return Err(E::custom("integer beyond 64 bits"));
        }
        Ok(PyFloat::new(self.0, v).into_any())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(PyString::new(self.0, v).into_any())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.None().into_bound(self.0))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        PyList::new(self.0, items)
            .map(Bound::into_any)
            .map_err(de::Error::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let dict = PyDict::new(self.0);
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            let value = map.next_value_seed(self)?;
            dict.set_item(key, value).map_err(de::Error::custom)?;
        }
        Ok(dict.into_any())
    }
}

/// A required `str` argument.
pub fn string(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => Ok(s.to_str()?.to_owned()),
        Err(_) => Err(errors::invalid(
            obj.py(),
            format!("argument '{arg}' must be a str, not {}", type_name(obj)),
        )),
    }
}

/// An optional `str` argument (`None` allowed).
pub fn opt_string(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<String>> {
    match obj {
        Some(o) if !o.is_none() => match o.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_str()?.to_owned())),
            Err(_) => Err(errors::invalid(
                o.py(),
                format!(
                    "argument '{arg}' must be a str or None, not {}",
                    type_name(o)
                ),
            )),
        },
        _ => Ok(None),
    }
}

/// An optional JSON object argument (`dict` or `None`).
pub fn opt_object(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<Value>> {
    match obj {
        Some(o) if !o.is_none() => {
            if o.cast::<PyDict>().is_err() {
                return Err(errors::invalid(
                    o.py(),
                    format!(
                        "argument '{arg}' must be a dict (a JSON object) or None, not {}",
                        type_name(o)
                    ),
                ));
            }
            to_json(o, arg).map(Some)
        }
        _ => Ok(None),
    }
}

/// An optional timeout in seconds (`None`, or a positive finite number).
pub fn opt_seconds(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<Duration>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let secs = if o.cast::<PyBool>().is_ok() {
        None
    } else if let Ok(f) = o.cast::<PyFloat>() {
        Some(f.value())
    } else if o.cast::<PyInt>().is_ok() {
        o.extract::<f64>().ok()
    } else {
        None
    };
    // Core's one check (contract::seconds): positive, at most
    // MAX_TIMEOUT_SECONDS, the same cap as every front end.
    match secs.map(|s| mcpmux_core::contract::seconds(arg, s)) {
        Some(Ok(d)) => Ok(Some(d)),
        _ => Err(errors::invalid(
            o.py(),
            format!(
                "argument '{arg}' must be a positive number of seconds (at most {}) or None, not {}",
                mcpmux_core::contract::MAX_TIMEOUT_SECONDS,
                o.repr().map_or_else(|_| type_name(o), |r| r.to_string())
            ),
        )),
    }
}

/// An optional count (`None`, or an `int` from 0 to 2**32 - 1; not a
/// `bool`). What the count means, and its bounds, are core's.
pub fn opt_count(obj: Option<&Bound<'_, PyAny>>, arg: &str) -> PyResult<Option<u32>> {
    let Some(o) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let n = if o.cast::<PyBool>().is_ok() || o.cast::<PyInt>().is_err() {
        None
    } else {
        o.extract::<u32>().ok()
    };
    n.map(Some).ok_or_else(|| {
        errors::invalid(
            o.py(),
            format!(
                "argument '{arg}' must be a non-negative int or None, not {}",
                o.repr().map_or_else(|_| type_name(o), |r| r.to_string())
            ),
        )
    })
}

/// Any JSON value; errors name `arg` and the path inside it.
pub fn to_json(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Value> {
    value(obj, 0).map_err(|(path, what)| {
        errors::invalid(obj.py(), format!("argument '{arg}'{path}: {what}"))
    })
}

/// A failed conversion: the path to the bad value (`["a"][0]`) and why.
type Bad = (String, String);

fn value(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Bad> {
    if depth > MAX_DEPTH {
        return Err((
            String::new(),
            format!("nested deeper than {MAX_DEPTH} levels (is there a cycle?)"),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s
            .to_str()
            .map(|s| Value::String(s.to_owned()))
            .map_err(|_| {
                (
                    String::new(),
                    "str is not valid Unicode (lone surrogate)".into(),
                )
            });
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err((
                    String::new(),
                    format!("dict keys must be str, not {}", type_name(&k)),
                ));
            };
            let key = key
                .to_str()
                .map_err(|_| (String::new(), "dict key is not valid Unicode".to_string()))?;
            let item = value(&v, depth + 1).map_err(|(p, w)| (format!("[{key:?}]{p}"), w))?;
            map.insert(key.to_owned(), item);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return seq(l.iter(), l.len(), depth);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return seq(t.iter(), t.len(), depth);
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        return Err((String::new(), "int does not fit in 64 bits".into()));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| (String::new(), "NaN and infinity are not valid JSON".into()));
    }
    Err((
        String::new(),
        format!(
            "cannot convert {} to JSON (use dict, list, tuple, str, int, float, bool or None)",
            type_name(obj)
        ),
    ))
}

fn seq<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    depth: usize,
) -> Result<Value, Bad> {
    let mut out = Vec::with_capacity(len);
    for (i, item) in items.enumerate() {
        out.push(value(&item, depth + 1).map_err(|(p, w)| (format!("[{i}]{p}"), w))?);
    }
    Ok(Value::Array(out))
}

/// `'int'`, `'set'`, ...: the Python type name of `obj`, quoted.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "an object".to_string(), |n| format!("'{n}'"))
}

/// `loads` for the tests (compared with `json.loads`).
#[pyfunction]
pub fn _json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    loads(py, text)
}
